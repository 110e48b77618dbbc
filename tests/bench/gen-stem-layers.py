#!/usr/bin/python3
"""Writes ResNet's stem as small ONNX models (random weights, batch 1), for
timing Weir's stem convolution and MaxPool on them one at a time (stem14p).
Nothing is downloaded.

    /usr/bin/python3 tests/bench/gen-stem-layers.py DIR
    build/weir bench DIR/stem7.onnx -t 1 -r 200 --impl Conv=stem

stem7.onnx: Conv 3 -> 64, 7x7, stride 2, pad 3 on 224 x 224, + ReLU (ResNet's
stem); pool.onnx: MaxPool 3x3, stride 2, pad 1 on 64 x 112 x 112 (the pooling
after it); stem7pool.onnx: both, in a row (as in the network, the pooling
reads what the stem just wrote); stem3.onnx: MobileNetV2's stem (3 -> 32, 3x3,
stride 2, pad 1, + ReLU6); stem5.onnx: 3 -> 32, 5x5, stride 2, pad 2, + ReLU
(75 taps per output, between the two).
"""
import os
import sys

import torch
from torch import nn


def export(model, shape, path):
    model.eval()
    x = torch.randn(*shape)
    torch.onnx.export(model, (x,), path, input_names=["x"],
                      output_names=["y"], opset_version=17)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: gen-stem-layers.py DIR")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    conv = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3), nn.ReLU())
    pool = nn.MaxPool2d(3, 2, 1)
    export(conv, (1, 3, 224, 224), os.path.join(out, "stem7.onnx"))
    export(pool, (1, 64, 112, 112), os.path.join(out, "pool.onnx"))
    export(nn.Sequential(conv, pool), (1, 3, 224, 224),
           os.path.join(out, "stem7pool.onnx"))
    export(nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.ReLU6()),
           (1, 3, 224, 224), os.path.join(out, "stem3.onnx"))
    export(nn.Sequential(nn.Conv2d(3, 32, 5, 2, 2), nn.ReLU()),
           (1, 3, 224, 224), os.path.join(out, "stem5.onnx"))


if __name__ == "__main__":
    main()
