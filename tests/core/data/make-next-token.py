#!/usr/bin/python3
"""Writes the next-token fixtures of test-cli-train (next-token mode):
next-token.onnx, a small language model (embedding of 16 tokens into 16
values, Linear 16->32, ReLU, Linear 32->16: logits [batch, T, 16], batch
and T dynamic), and next-token-data.npy, 4096 int32 tokens of a simple
"language": after token a comes (5a + 3) mod 16, except that one token in
ten is drawn at random.  A model that learns the rule reaches a loss near
the noise's entropy (about 0.45), far below log(16) = 2.77.  Run with
Debian's /usr/bin/python3 (torch 1.13):

    /usr/bin/python3 tests/core/data/make-next-token.py
"""
import os

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
V, D, H = 16, 16, 32


class NextToken(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(V, D)
        self.fc1 = torch.nn.Linear(D, H)
        self.fc2 = torch.nn.Linear(H, V)

    def forward(self, tokens):
        return self.fc2(torch.relu(self.fc1(self.embed(tokens))))


torch.manual_seed(16)
model = NextToken()
x = torch.zeros(2, 8, dtype=torch.int64)
torch.onnx.export(model, x, os.path.join(HERE, "next-token.onnx"),
                  input_names=["tokens"], output_names=["logits"],
                  dynamic_axes={"tokens": {0: "batch", 1: "T"},
                                "logits": {0: "batch", 1: "T"}},
                  opset_version=13)
rng = np.random.default_rng(16)
tokens = np.zeros(4096, dtype=np.int32)
for i in range(1, len(tokens)):
    tokens[i] = rng.integers(0, V) if rng.random() < 0.1 else (5 * tokens[i - 1] + 3) % V
np.save(os.path.join(HERE, "next-token-data.npy"), tokens)
