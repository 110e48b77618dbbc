#!/usr/bin/python3
"""Writes the 1x1 convolutions of ResNet-50 as small ONNX models (random
weights, batch 1), for timing Weir's GEMM on them one at a time: a
bottleneck's reduction (Conv + ReLU), its expansion with the residual
(Conv + Add + ReLU, the residual a second input) and the strided
downsample (Conv alone).  Nothing is downloaded.

    /usr/bin/python3 tests/bench/gen-conv1x1-layers.py DIR
    build/weir bench -t 2 -r 100 DIR/c256_1024_14_r.onnx

c<C>_<M>_<HW>[_s2][_r]: C input channels, M output channels, an HW x HW
output map; _s2: stride 2 (the input is 2 HW x 2 HW); _r: + residual, ReLU.
"""
import os
import sys

import torch
from torch import nn

# (C, M, output HW, stride, residual): one of each shape in ResNet-50
SPECS = [
    (64, 64, 56, 1, False),
    (256, 64, 56, 1, False),
    (64, 256, 56, 1, True),
    (256, 128, 56, 1, False),
    (256, 512, 28, 2, False),
    (512, 128, 28, 1, False),
    (128, 512, 28, 1, True),
    (512, 256, 28, 1, False),
    (512, 1024, 14, 2, False),
    (1024, 256, 14, 1, False),
    (256, 1024, 14, 1, True),
    (1024, 512, 14, 1, False),
]


class Layer(nn.Module):
    def __init__(self, c, m, stride, residual):
        super().__init__()
        self.conv = nn.Conv2d(c, m, 1, stride)
        self.stride = stride
        self.residual = residual

    def forward(self, x, r=None):
        y = self.conv(x)
        if self.residual:
            return torch.relu(y + r)
        return y if self.stride > 1 else torch.relu(y)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for c, m, hw, stride, residual in SPECS:
        torch.manual_seed(0)
        model = Layer(c, m, stride, residual).eval()
        args = (torch.randn(1, c, hw * stride, hw * stride),)
        names = ["x"]
        if residual:
            args += (torch.randn(1, m, hw, hw),)
            names.append("r")
        name = "c%d_%d_%d%s%s" % (c, m, hw, "_s2" if stride > 1 else "",
                                  "_r" if residual else "")
        torch.onnx.export(model, args, os.path.join(out, name + ".onnx"),
                          opset_version=13, input_names=names,
                          output_names=["y"])


if __name__ == "__main__":
    main()
