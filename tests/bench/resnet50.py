#!/usr/bin/env python3
"""ResNet-50 (torchvision, random weights) at batch 1, 3x224x224, exported to
ONNX with an input and PyTorch's output, for the compile figures of
docs/performance.md ("Compiling real models").  Nothing it writes is
committed.  Usage: resnet50.py OUTDIR  (writes OUTDIR/resnet50.onnx,
OUTDIR/input.npy, OUTDIR/output.npy)."""
import sys
import numpy as np
import torch
import torchvision

out = sys.argv[1]
torch.manual_seed(0)
model = torchvision.models.resnet50(weights=None).eval()
x = torch.randn(1, 3, 224, 224)
with torch.no_grad():
    y = model(x)
torch.onnx.export(model, x, f"{out}/resnet50.onnx", input_names=["input"],
                  output_names=["output"], opset_version=13)
np.save(f"{out}/input.npy", x.numpy())
np.save(f"{out}/output.npy", y.numpy())
print("parameters", sum(p.numel() for p in model.parameters()))
