#!/usr/bin/python3
"""gen-cifar-cnn.py OUT.onnx — a CIFAR-size CNN for the data-parallel
benchmark (tests/bench/mpi-train-bench.sh, docs/distributed.md): random
weights (seed 0), symbolic batch, input "input" [N, 3, 32, 32], output
"output" [N, 10]:

  conv3x3(3->16, pad 1) ReLU pool2 -> conv3x3(16->32) ReLU pool2
  -> conv3x3(32->64) ReLU pool2 -> flatten [N, 1024] -> 128 ReLU -> 10

156,074 parameters (624 KB of f32 gradients per step).
"""
import io
import sys
import warnings

import onnx
import torch
from torch import nn


class CifarCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv3 = nn.Conv2d(32, 64, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(64 * 4 * 4, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = self.pool(torch.relu(self.conv2(x)))
        x = self.pool(torch.relu(self.conv3(x)))
        x = torch.flatten(x, 1)
        return self.fc2(torch.relu(self.fc1(x)))


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-cifar-cnn.py OUT.onnx")
    torch.manual_seed(0)
    model = CifarCNN().eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (torch.zeros(2, 3, 32, 32),), buf,
                          opset_version=13, do_constant_folding=True,
                          input_names=["input"], output_names=["output"],
                          dynamic_axes={"input": {0: "batch"},
                                        "output": {0: "batch"}},
                          training=torch.onnx.TrainingMode.EVAL)
    proto = onnx.load_from_string(buf.getvalue())
    proto.doc_string = ""
    onnx.save(proto, sys.argv[1])
    n = sum(p.numel() for p in model.parameters())
    print(f"{sys.argv[1]}: CIFAR-size CNN, {n} parameters")


if __name__ == "__main__":
    main()
