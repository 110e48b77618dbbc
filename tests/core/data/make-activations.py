#!/usr/bin/python3
"""Writes tests/core/data/activations.onnx, the activation fixture of
tests/core/test-pipeline.c.

Convolutions each followed by one of the activations the -O2 pipeline folds
into the convolution as an epilogue (docs/recipes.md#optimization-levels):
batch norm + SiLU (x * sigmoid(x)), Hardswish, ReLU6 (Clip), Sigmoid, Tanh,
a residual Add followed by a scale, then global average pooling, a linear
layer and GELU (exported at opset 13 as the Erf pattern), and a
Transpose + Reshape pair.  Random weights under torch.manual_seed(0);
batch 1, 3 x 8 x 8.  Nothing is downloaded.

    /usr/bin/python3 tests/core/data/make-activations.py tests/core/data
"""
import io
import os
import sys

import torch
from torch import nn


class Activations(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 1)
        self.c3 = nn.Conv2d(8, 8, 3, padding=1)
        self.c4 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.c5 = nn.Conv2d(8, 8, 1)
        self.c6 = nn.Conv2d(8, 8, 3, padding=1)
        self.fc = nn.Linear(8, 16)

    def forward(self, x):
        x = nn.functional.silu(self.bn1(self.c1(x)))
        x = nn.functional.hardswish(self.c2(x))
        r = nn.functional.relu6(self.c3(x))
        x = torch.sigmoid(self.c4(r))
        x = torch.tanh(self.c5(x))
        x = (self.c6(x) + r) * 0.5
        x = torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1)
        x = nn.functional.gelu(self.fc(x))
        return x.reshape(1, 4, 4).transpose(1, 2).reshape(1, 16)


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    m = Activations()
    # non-trivial batch-norm statistics
    with torch.no_grad():
        m.bn1.running_mean.uniform_(-0.5, 0.5)
        m.bn1.running_var.uniform_(0.5, 1.5)
        m.bn1.weight.uniform_(0.5, 1.5)
        m.bn1.bias.uniform_(-0.5, 0.5)
    m.eval()
    x = torch.randn(1, 3, 8, 8, generator=torch.Generator().manual_seed(1))
    buf = io.BytesIO()
    torch.onnx.export(m, (x,), buf, opset_version=13, input_names=["input"],
                      output_names=["output"], do_constant_folding=True)
    with open(os.path.join(out, "activations.onnx"), "wb") as f:
        f.write(buf.getvalue())


if __name__ == "__main__":
    main()
