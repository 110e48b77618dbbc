#!/usr/bin/python3
"""Writes the 1x1 convolutions of ResNet-50 as small ONNX models (random
weights, batch 1), for timing Weir's GEMM on them one at a time: a
bottleneck's reduction (Conv + ReLU), its expansion with the residual
(Conv + Add + ReLU, the residual a second input) and the strided
downsample (Conv alone).  Nothing is downloaded.

    /usr/bin/python3 tests/bench/gen-conv1x1-layers.py DIR [--mobile]
    build/weir bench -t 2 -r 100 DIR/c256_1024_14_r.onnx

c<C>_<M>_<HW>[_s2][_r]: C input channels, M output channels, an HW x HW
output map; _s2: stride 2 (the input is 2 HW x 2 HW); _r: + residual, ReLU.
--mobile writes the 1x1 shapes of MobileNetV2 and EfficientNet-B0 instead
(conv14n; the 7x7 ones take the channel-vector tile): m<C>_<M>_<HW> an
expansion or the head (Conv + ReLU6), p<C>_<M>_<HW>[_a] a projection (Conv
alone; _a: + residual, no activation).  --mobile --silu writes only the
expansions, with SiLU (EfficientNet-B0's) instead of ReLU6, as
s<C>_<M>_<HW> (silu14o).
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
    (1024, 2048, 7, 2, False),
    (2048, 512, 7, 1, False),
    (512, 2048, 7, 1, True),
]

# (C, M, output HW, kind): "m" expansion, "p" projection, "pa" + residual
MOBILE = [
    (16, 96, 112, "m"), (32, 16, 112, "p"),
    (24, 144, 56, "m"), (96, 24, 56, "p"), (144, 24, 56, "pa"),
    (32, 192, 28, "m"), (144, 32, 28, "p"), (192, 32, 28, "pa"),
    (40, 240, 28, "m"), (144, 40, 28, "p"), (240, 40, 28, "pa"),
    (64, 384, 14, "m"), (192, 64, 14, "p"), (384, 64, 14, "pa"),
    (96, 576, 14, "m"), (384, 96, 14, "p"), (576, 96, 14, "pa"),
    (80, 480, 14, "m"), (240, 80, 14, "p"), (480, 80, 14, "pa"),
    (112, 672, 14, "m"), (480, 112, 14, "p"), (672, 112, 14, "pa"),
    (160, 960, 7, "m"), (576, 160, 7, "p"), (960, 160, 7, "pa"),
    (960, 320, 7, "p"), (320, 1280, 7, "m"),
    (192, 1152, 7, "m"), (672, 192, 7, "p"), (1152, 192, 7, "pa"),
    (1152, 320, 7, "p"),
]


class Mobile(nn.Module):
    def __init__(self, c, m, kind):
        super().__init__()
        self.conv = nn.Conv2d(c, m, 1)
        self.kind = kind

    def forward(self, x, r=None):
        y = self.conv(x)
        if self.kind == "m":
            return torch.clamp(y, 0.0, 6.0)
        if self.kind == "s":
            return y * torch.sigmoid(y)
        return y + r if self.kind == "pa" else y


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
    args = [a for a in sys.argv[1:] if a not in ("--mobile", "--silu")]
    out = args[0] if args else "."
    os.makedirs(out, exist_ok=True)
    if "--mobile" in sys.argv[1:]:
        silu = "--silu" in sys.argv[1:]
        for c, m, hw, kind in MOBILE:
            if silu:
                if kind != "m":
                    continue
                kind = "s"
            torch.manual_seed(0)
            model = Mobile(c, m, kind).eval()
            xs = (torch.randn(1, c, hw, hw),)
            names = ["x"]
            if kind == "pa":
                xs += (torch.randn(1, m, hw, hw),)
                names.append("r")
            name = "%s%d_%d_%d%s" % (kind[0], c, m, hw,
                                     "_a" if kind == "pa" else "")
            torch.onnx.export(model, xs, os.path.join(out, name + ".onnx"),
                              opset_version=13, input_names=names,
                              output_names=["y"])
        return
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
