#!/usr/bin/env python3
"""Exports small variants of three torchvision architectures to ONNX (opset
13, random weights, eval mode), each with an input and PyTorch's output as
.npy, for tests/onnx/small-architectures.sh:

  vit     torchvision VisionTransformer: 32x32 image, 16x16 patches, 2
          layers (the class token's expand(batch, -1, -1) -> Where/Expand)
  swin    torchvision SwinTransformer: 40x40 image, 4x4 patches, window 4,
          2 stages (shifted windows: Mod-computed Pad, Slice assignments
          exported as ScatterND, Equal/Not/Where masks, Range)
  deeplab a strided convolution and torchvision's DeepLabHead (ASPP with
          its pooled branch) upsampled bilinearly to the input size
          (Resize, linear)

Usage: small-architectures.py OUTDIR.  Writes OUTDIR/NAME.onnx,
NAME-input.npy, NAME-output.npy.  Needs torch, torchvision, onnx (Debian's
/usr/bin/python3); nothing it writes is committed."""
import sys

import numpy as np
import torch
import torchvision
from torchvision.models.segmentation.deeplabv3 import DeepLabHead


class SmallDeepLab(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, stride=4, padding=1),
            torch.nn.BatchNorm2d(8), torch.nn.Hardswish())
        self.head = DeepLabHead(8, 5)

    def forward(self, x):
        y = self.head(self.stem(x))
        return torch.nn.functional.interpolate(
            y, size=x.shape[-2:], mode="bilinear", align_corners=False)


def models():
    yield "vit", torchvision.models.VisionTransformer(
        image_size=32, patch_size=16, num_layers=2, num_heads=2,
        hidden_dim=32, mlp_dim=64, num_classes=10), (1, 3, 32, 32)
    yield "swin", torchvision.models.swin_transformer.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2],
        window_size=[4, 4], num_classes=10), (1, 3, 40, 40)
    yield "deeplab", SmallDeepLab(), (1, 3, 32, 32)


def main(out):
    for name, model, shape in models():
        torch.manual_seed(0)
        for p in model.parameters():
            torch.nn.init.normal_(p, std=0.2)
        model.eval()
        x = torch.randn(*shape)
        with torch.no_grad():
            y = model(x)
        torch.onnx.export(model, x, f"{out}/{name}.onnx",
                          input_names=["input"], output_names=["output"],
                          opset_version=13)
        np.save(f"{out}/{name}-input.npy", x.numpy())
        np.save(f"{out}/{name}-output.npy", y.numpy())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
