#!/usr/bin/python3
"""Writes the 3x3 convolutions of ResNet-18 and ResNet-50 that run on
Weir's im2col GEMM (not Winograd) as small ONNX models (random weights,
batch 1), for timing them one at a time against ONNX Runtime: the
strided 3x3 of each stage's first block (Conv + ReLU) and the stride-1
3x3 on 7x7 maps (Conv + ReLU).  Nothing is downloaded.

    /usr/bin/python3 tests/bench/gen-conv3x3-layers.py DIR
    build/weir bench -t 1 -r 100 DIR/k128_128_28_s2.onnx

k<C>_<M>_<HW>[_s2]: C input channels, M output channels, an HW x HW
output map, padding 1; _s2: stride 2 (the input is 2 HW x 2 HW).  The
1x1 stride-2 downsamples are tests/bench/gen-conv1x1-layers.py's
c<C>_<M>_<HW>_s2.
"""
import os
import sys

import torch
from torch import nn

# (C, M, output HW, stride, networks): one of each shape
SPECS = [
    (64, 128, 28, 2, "resnet18"),
    (128, 256, 14, 2, "resnet18"),
    (256, 512, 7, 2, "resnet18"),
    (512, 512, 7, 1, "resnet18, resnet50"),
    (128, 128, 28, 2, "resnet50"),
    (256, 256, 14, 2, "resnet50"),
    (512, 512, 7, 2, "resnet50"),
]


class Layer(nn.Module):
    def __init__(self, c, m, stride):
        super().__init__()
        self.conv = nn.Conv2d(c, m, 3, stride, 1)

    def forward(self, x):
        return torch.relu(self.conv(x))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for c, m, hw, stride, _ in SPECS:
        torch.manual_seed(0)
        model = Layer(c, m, stride).eval()
        x = torch.randn(1, c, hw * stride, hw * stride)
        name = "k%d_%d_%d%s" % (c, m, hw, "_s2" if stride > 1 else "")
        torch.onnx.export(model, (x,), os.path.join(out, name + ".onnx"),
                          opset_version=13, input_names=["x"],
                          output_names=["y"])


if __name__ == "__main__":
    main()
