#!/usr/bin/python3
"""Writes the squeeze-and-excitation tails of EfficientNet-B0 as small ONNX
models (random weights, batch 1), for timing channel-scale-folding alone:
the gate (global average pooling, a 1x1 convolution, sigmoid) multiplied
into the map, then the 1x1 projection.  Nothing is downloaded.

    /usr/bin/python3 tests/bench/gen-se-layers.py DIR
    sh tests/bench/ab-cputime.sh BUILD_A BUILD_B --models "DIR/se32_16_112.onnx ..."

se<C>_<M>_<HW>: C channels of HW x HW scaled, projected to M.
"""
import os
import sys

import torch
from torch import nn

SPECS = {
    "se32_16_112": (32, 16, 112),
    "se96_24_56": (96, 24, 56),
    "se240_40_28": (240, 40, 28),
    "se480_80_14": (480, 80, 14),
    "se672_112_14": (672, 112, 14),
}


class Tail(nn.Module):
    def __init__(self, c, m):
        super().__init__()
        self.fc = nn.Conv2d(c, c, 1)
        self.project = nn.Conv2d(c, m, 1)

    def forward(self, x):
        s = torch.sigmoid(self.fc(nn.functional.adaptive_avg_pool2d(x, 1)))
        return self.project(x * s)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    os.makedirs(out, exist_ok=True)
    for name, (c, m, hw) in SPECS.items():
        torch.manual_seed(0)
        model = Tail(c, m).eval()
        x = torch.randn(1, c, hw, hw)
        torch.onnx.export(model, (x,), os.path.join(out, name + ".onnx"),
                          opset_version=13, input_names=["input"],
                          output_names=["output"])


if __name__ == "__main__":
    main()
