#!/usr/bin/python3
"""realsize-models.py — the real-size models of tests/bench/realsize.sh.

    realsize-models.py export DIR NAME...
        builds each model (random weights, seeded) and writes
        DIR/NAME.onnx, DIR/NAME.input.npy, DIR/NAME.output.npy (PyTorch's
        output), DIR/NAME.pt (the weights, for the timing below) and
        DIR/NAME.flops (FLOPs of one run, see below); a model whose five
        files exist is left alone.
    realsize-models.py torch DIR NAME [--threads N] [--reps N] [--warmup N]
        PyTorch's inference time of the same model (its weights loaded
        from DIR/NAME.pt) on DIR/NAME.input.npy, under
        torch.inference_mode() with torch.set_num_threads(N). The last line
        printed is "ok MEDIAN_MS MAX_ABS_ERR PASS|FAIL min_ms=MIN_MS", like
        peer-torch.py and peer-ort.cjs.
    realsize-models.py list
        the model names.

Needs Debian's python3-torch, python3-torchvision, python3-onnx and
python3-numpy (run it with /usr/bin/python3). Nothing it writes is meant
to be committed.

FLOPs count two per multiply-add of the convolutions, the fully connected
layers and the attention's two batched products (forward hooks on Conv2d
and Linear, a formula for the attention); element-wise operators,
normalization and pooling are not counted, as usual for these models.
"""

import argparse
import math
import os
import statistics
import sys
import time

RTOL, ATOL = 1e-4, 1e-5
OPSET = 13


def _imports():
    global np, torch, nn, F, torchvision
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torchvision


def bert_layer_class():
    class Layer(nn.Module):
        """One BERT-base encoder layer (post-norm, exact GELU): hidden 768,
        12 heads, FFN 3072, at a fixed [batch, tokens] so that the export
        has constant shapes."""

        def __init__(self, batch=1, tokens=128, hidden=768, heads=12, ffn=3072):
            super().__init__()
            self.b, self.t, self.h, self.nh = batch, tokens, hidden, heads
            self.dh = hidden // heads
            self.q = nn.Linear(hidden, hidden)
            self.k = nn.Linear(hidden, hidden)
            self.v = nn.Linear(hidden, hidden)
            self.o = nn.Linear(hidden, hidden)
            self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
            self.f1 = nn.Linear(hidden, ffn)
            self.f2 = nn.Linear(ffn, hidden)
            self.ln2 = nn.LayerNorm(hidden, eps=1e-12)

        def split(self, y):
            return y.reshape(self.b, self.t, self.nh, self.dh).transpose(1, 2)

        def forward(self, x):
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            a = torch.softmax(torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.dh), dim=-1)
            c = torch.matmul(a, v).transpose(1, 2).reshape(self.b, self.t, self.h)
            x = self.ln1(x + self.o(c))
            return self.ln2(x + self.f2(F.gelu(self.f1(x))))

        def extra_flops(self):
            # Q K^T and A V: 2 products of heads x tokens x tokens x head dim
            return 2 * 2 * self.b * self.nh * self.t * self.t * self.dh

    return Layer


def cifar_resnet18():
    """ResNet-18 for 32x32 images (3x3 stem at stride 1, no max pooling,
    widths 64-128-256-512, 10 classes), from torchvision's ResNet."""
    m = torchvision.models.resnet18(weights=None, num_classes=10)
    m.conv1 = nn.Conv2d(3, 64, 3, 1, 1, bias=False)
    m.maxpool = nn.Identity()
    return m


# name -> (builder, input shape, description)
def models():
    tv = torchvision.models
    return {
        "resnet18": (lambda: tv.resnet18(weights=None), (1, 3, 224, 224), "ResNet-18 b1 224"),
        "resnet50": (lambda: tv.resnet50(weights=None), (1, 3, 224, 224), "ResNet-50 b1 224"),
        "mobilenet_v2": (lambda: tv.mobilenet_v2(weights=None), (1, 3, 224, 224), "MobileNetV2 b1 224"),
        "efficientnet_b0": (lambda: tv.efficientnet_b0(weights=None), (1, 3, 224, 224), "EfficientNet-B0 b1 224"),
        "bert_layer": (lambda: bert_layer_class()(), (1, 128, 768), "BERT-base layer 1x128"),
        "cifar_resnet18": (cifar_resnet18, (32, 3, 32, 32), "CIFAR ResNet-18 b32"),
    }


NAMES = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "bert_layer", "cifar_resnet18"]


def build(name):
    """The model (eval mode) and its input, both from fixed seeds.

    Batch normalization statistics are calibrated on a random batch (one
    training-mode forward pass with momentum 1): with torchvision's
    initial statistics (mean 0, variance 1) the activations of MobileNetV2
    and EfficientNet-B0 shrink layer after layer and their outputs are
    about 1e-9 and 1e-14, which makes any comparison with an absolute
    tolerance pass."""
    make, shape, _ = models()[name]
    torch.manual_seed(0)
    model = make()
    bns = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    if bns:
        for m in bns:
            m.momentum = 1.0
        calib = torch.randn(max(shape[0], 4), *shape[1:], generator=torch.Generator().manual_seed(2))
        model.train()
        with torch.no_grad():
            model(calib)
    model.eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=g)
    return model, x


def count_flops(model, x):
    total = [0]

    def conv(mod, inp, out):
        kh, kw = mod.kernel_size
        total[0] += 2 * out.numel() * (mod.in_channels // mod.groups) * kh * kw

    def linear(mod, inp, out):
        total[0] += 2 * out.numel() * mod.in_features

    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv))
        elif isinstance(m, nn.Linear):
            hooks.append(m.register_forward_hook(linear))
    with torch.inference_mode():
        model(x)
    for h in hooks:
        h.remove()
    if hasattr(model, "extra_flops"):
        total[0] += model.extra_flops()
    return total[0]


def export(outdir, name):
    base = os.path.join(outdir, name)
    files = [base + s for s in (".onnx", ".input.npy", ".output.npy", ".flops", ".pt")]
    if all(os.path.exists(f) for f in files):
        print(f"{name}: already in {outdir}")
        return
    model, x = build(name)
    with torch.inference_mode():
        y = model(x)
    torch.onnx.export(model, x, base + ".onnx", input_names=["input"],
                      output_names=["output"], opset_version=OPSET)
    np.save(base + ".input.npy", x.numpy())
    np.save(base + ".output.npy", y.numpy())
    torch.save(model.state_dict(), base + ".pt")
    flops = count_flops(model, x)
    with open(base + ".flops", "w") as f:
        f.write(f"{flops}\n")
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: exported ({params} parameters, {flops / 1e9:.3f} GFLOP)")


def time_torch(outdir, name, threads, reps, warmup):
    base = os.path.join(outdir, name)
    torch.set_num_threads(threads)
    make, _, _ = models()[name]
    model = make()
    model.load_state_dict(torch.load(base + ".pt"))
    model.eval()
    x = torch.from_numpy(np.load(base + ".input.npy"))
    want = np.load(base + ".output.npy")
    with torch.inference_mode():
        for _ in range(max(warmup, 1)):
            y = model(x)
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            y = model(x)
            times.append(time.perf_counter() - t0)
    got = y.numpy().reshape(want.shape)
    err = float(np.max(np.abs(got - want)))
    ok = bool(np.all(np.abs(got - want) <= ATOL + RTOL * np.abs(want)))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"ok {statistics.median(times) * 1e3:.6f} {err:.3g} "
          f"{'PASS' if ok else 'FAIL'} min_ms={min(times) * 1e3:.6f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["export", "torch", "list"])
    p.add_argument("dir", nargs="?")
    p.add_argument("names", nargs="*")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    if a.command == "list":
        print(" ".join(NAMES))
        return 0
    try:
        _imports()
    except ImportError as e:
        print(f"skip {e} (Debian's python3-torch, python3-torchvision and python3-numpy are needed)")
        return 0
    if not a.dir or not a.names:
        p.error("DIR and at least one NAME are needed")
    for n in a.names:
        if n not in NAMES:
            print(f"fail unknown model {n} (known: {' '.join(NAMES)})")
            return 1
    if a.command == "export":
        os.makedirs(a.dir, exist_ok=True)
        for n in a.names:
            export(a.dir, n)
    else:
        time_torch(a.dir, a.names[0], a.threads, a.reps, a.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
