#!/usr/bin/python3
"""Writes tests/core/data/squeeze-excite.onnx, the squeeze-and-excitation
fixture of tests/core/test-pipeline.c (the sample models have none).

An EfficientNet-style block at odd sizes: a 1x1 expansion with SiLU, a
depthwise 3x3 with SiLU, squeeze-and-excitation (global average pooling,
two 1x1 convolutions with SiLU and sigmoid, the gate multiplied into the
map), a 1x1 projection; then a second gate (the mean of the projection's
channels through a sigmoid) in front of a 3x3 convolution with padding.
-O1 moves both gates onto the weights of the convolution after them
(channel-scale-folding: 7 x 12 and 2 x 7 x 3 x 3 weights, at most a
quarter of the 12 x 9 x 9 and 7 x 9 x 9 maps).  Random weights under torch.manual_seed(0); batch
1, 5 x 9 x 9.  Nothing is downloaded.

    /usr/bin/python3 tests/core/data/make-squeeze-excite.py tests/core/data
"""
import io
import os
import sys

import torch
from torch import nn


class SqueezeExcite(nn.Module):
    def __init__(self):
        super().__init__()
        self.expand = nn.Conv2d(5, 12, 1)
        self.dw = nn.Conv2d(12, 12, 3, padding=1, groups=12)
        self.fc1 = nn.Conv2d(12, 3, 1)
        self.fc2 = nn.Conv2d(3, 12, 1)
        self.project = nn.Conv2d(12, 7, 1)
        self.out = nn.Conv2d(7, 2, 3, padding=1)

    def forward(self, x):
        x = nn.functional.silu(self.expand(x))
        x = nn.functional.silu(self.dw(x))
        s = nn.functional.adaptive_avg_pool2d(x, 1)
        s = torch.sigmoid(self.fc2(nn.functional.silu(self.fc1(s))))
        y = self.project(x * s)
        g = torch.sigmoid(y.mean(dim=(2, 3), keepdim=True))
        return self.out(y * g)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    m = SqueezeExcite().eval()
    x = torch.randn(1, 5, 9, 9, generator=torch.Generator().manual_seed(1))
    buf = io.BytesIO()
    torch.onnx.export(m, (x,), buf, opset_version=13, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    with open(os.path.join(out, "squeeze-excite.onnx"), "wb") as f:
        f.write(buf.getvalue())


if __name__ == "__main__":
    main()
