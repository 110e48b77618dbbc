#!/usr/bin/env python3
"""Exports torchvision models (random weights, eval mode) at batch 1,
3x224x224, to ONNX with an input and PyTorch's output, for the compile
figures of docs/performance.md ("Compiling real models") and
tests/bench/compile-scale.sh.  Nothing it writes is committed (VGG-11-BN is
a 531 MB file).  Run it with /usr/bin/python3 (torch, torchvision, onnx).

Usage: torchvision-models.py OUTDIR NAME...
  NAME: squeezenet1_1, mobilenet_v2, resnet18, resnet50, alexnet, vgg11_bn
  (any torchvision.models constructor taking weights=None).
Writes OUTDIR/NAME.onnx, OUTDIR/NAME-input.npy, OUTDIR/NAME-output.npy and
prints "NAME parameters N"."""
import sys

import numpy as np
import torch
import torchvision


def export(out, name):
    torch.manual_seed(0)
    model = getattr(torchvision.models, name)(weights=None).eval()
    x = torch.randn(1, 3, 224, 224)
    with torch.no_grad():
        y = model(x)
    torch.onnx.export(model, x, f"{out}/{name}.onnx", input_names=["input"],
                      output_names=["output"], opset_version=13)
    np.save(f"{out}/{name}-input.npy", x.numpy())
    np.save(f"{out}/{name}-output.npy", y.numpy())
    print(name, "parameters", sum(p.numel() for p in model.parameters()),
          flush=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    for n in sys.argv[2:]:
        export(sys.argv[1], n)
