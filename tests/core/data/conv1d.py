#!/usr/bin/python3
"""Writes the Conv1d training-step fixture of tests/core/test-train-step.c.

A small 1-D convolutional classifier (Conv1d with padding and stride, ReLU,
MaxPool1d, a second Conv1d, Flatten, Linear) has no backward rule for its
convolutions and pool in Weir (the rules cover two spatial dimensions), so
its training step goes through the autodiff fallback over the expanded maps
(docs/training.md).  The files are made by samples/models/generate.py's own
export and training-step functions, so the format is that of the sample
models: conv1d.onnx and conv1d/train/ (manifest.json, input, target, loss,
gradients, parameters after SGD and after Adam).

    /usr/bin/python3 tests/core/data/conv1d.py tests/core/data
"""
import importlib.util
import os
import sys

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
GENERATE = os.path.join(HERE, "..", "..", "..", "samples", "models", "generate.py")


class Conv1dNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv1d(2, 4, 3, padding=1, stride=2)
        self.pool = nn.MaxPool1d(2)
        self.conv2 = nn.Conv1d(4, 3, 2, dilation=2)
        self.fc = nn.Linear(3 * 2, 5)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = torch.tanh(self.conv2(x))
        return self.fc(torch.flatten(x, 1))


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else HERE
    spec = importlib.util.spec_from_file_location("generate", GENERATE)
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    torch.manual_seed(71)
    torch.set_num_threads(1)
    model = Conv1dNet().eval()
    x = torch.randn(3, 2, 16, generator=torch.Generator().manual_seed(72))
    proto = gen.export_onnx(model, x, dict())
    with open(os.path.join(out, "conv1d.onnx"), "wb") as f:
        f.write(proto.SerializeToString())
    files, summary = gen.train_step("conv1d", None, 7, model, proto, x)
    train = os.path.join(out, "conv1d", "train")
    os.makedirs(train, exist_ok=True)
    for name, data in files:
        with open(os.path.join(train, name), "wb") as f:
            f.write(data)
    print("conv1d:", summary)


if __name__ == "__main__":
    main()
