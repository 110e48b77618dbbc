#!/usr/bin/python3
"""train-models.py — the real-size models of tests/bench/train-realsize.sh.

    train-models.py export DIR NAME...
        builds each model (random weights, seeded) and writes DIR/NAME.onnx
        (exported for one fixed batch), DIR/NAME/train/input.npy and
        target.npy (the batch and the training target, the layout
        tests/bench-train reads), DIR/NAME.pt (the weights) and
        DIR/NAME.flops (FLOPs of one training step, see below).  A model
        whose files all exist, written by this version of the export
        (DIR/NAME.version), is left alone.
    train-models.py torch DIR NAME [--threads N] [--reps N] [--warmup N]
        PyTorch's time for one training step of the same model (weights
        from DIR/NAME.pt, data from DIR/NAME/train): zero_grad, forward in
        training mode (batch statistics in BatchNorm), the loss (mean
        softmax cross-entropy for the classifiers, mean squared error for
        the transformer layer), backward, SGD step with lr 0.01 -- the step
        of Weir's training program (tests/bench/bench-train.c).  The last
        line printed is "ok MEDIAN_MS min_ms=MIN_MS mean_ms=MEAN_MS".
    train-models.py list
        the model names.

The models (the sizes of issue 16):
    mlp          MLP 784-512-512-10 (ReLU), batch 64
    resnet18     CIFAR ResNet-18 at half width (widths 32-64-128-256, 3x3
                 stem at stride 1, no max pooling), batch 32, 3x32x32,
                 10 classes
    mbconv       a mobile CNN, EfficientNet-style: MBConv blocks (1x1
                 expansion, depthwise 3x3, squeeze-excite, 1x1 projection,
                 batch norms, SiLU), batch 8, 3x64x64, 10 classes
    transformer  one transformer encoder layer (d_model 256, 4 heads,
                 FFN 1024, ReLU, post-norm), batch 8, 128 tokens, MSE

FLOPs of a training step are counted as three times the forward FLOPs
(forward, gradient of the input, gradient of the weights), the forward
FLOPs two per multiply-add of the convolutions, the linear layers and the
attention's two batched products; element-wise operators, normalization,
pooling and the optimizer update are not counted.

Needs Debian's python3-torch, python3-onnx and python3-numpy (run it with
/usr/bin/python3).  Nothing it writes is meant to be committed.
"""

import argparse
import copy
import os
import statistics
import sys
import time
import warnings

OPSET = 13
# 2: no two parameters or buffers with equal values (see distinct_values)
EXPORT_VERSION = "2"


def _imports():
    global np, torch, nn, F
    import numpy as np
    import torch
    import torch.nn as nn
    import torch.nn.functional as F


def mlp():
    return nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512),
                         nn.ReLU(), nn.Linear(512, 10))


def resnet18_half():
    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = F.relu(self.b1(self.c1(x)))
            y = self.b2(self.c2(y))
            return F.relu(y + (x if self.down is None else self.down(x)))

    class Net(nn.Module):
        def __init__(self, w=32):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, w, 3, 1, 1, bias=False),
                                      nn.BatchNorm2d(w), nn.ReLU())
            blocks, cin = [], w
            for i, cout in enumerate((w, 2 * w, 4 * w, 8 * w)):
                for j in range(2):
                    blocks.append(Block(cin, cout, 2 if i > 0 and j == 0 else 1))
                    cin = cout
            self.blocks = nn.Sequential(*blocks)
            self.fc = nn.Linear(cin, 10)

        def forward(self, x):
            x = self.blocks(self.stem(x))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    return Net()


def mbconv_net():
    class SiLU(nn.Module):  # x * sigmoid(x): Sigmoid and Mul at opset 13
        def forward(self, x):
            return x * torch.sigmoid(x)

    class MBConv(nn.Module):
        def __init__(self, cin, cout, expand, stride):
            super().__init__()
            mid = cin * expand
            self.expand = nn.Sequential(nn.Conv2d(cin, mid, 1, bias=False),
                                        nn.BatchNorm2d(mid), SiLU())
            self.dw = nn.Sequential(nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False),
                                    nn.BatchNorm2d(mid), SiLU())
            sq = max(1, cin // 4)
            self.se1 = nn.Conv2d(mid, sq, 1)
            self.se2 = nn.Conv2d(sq, mid, 1)
            self.act = SiLU()
            self.project = nn.Sequential(nn.Conv2d(mid, cout, 1, bias=False),
                                         nn.BatchNorm2d(cout))
            self.residual = stride == 1 and cin == cout

        def forward(self, x):
            y = self.dw(self.expand(x))
            s = torch.sigmoid(self.se2(self.act(self.se1(F.adaptive_avg_pool2d(y, 1)))))
            y = self.project(y * s)
            return y + x if self.residual else y

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False),
                                      nn.BatchNorm2d(16), SiLU())
            cfg = [(16, 24, 4, 2), (24, 24, 4, 1), (24, 40, 4, 2), (40, 40, 4, 1),
                   (40, 80, 4, 2), (80, 80, 4, 1), (80, 112, 4, 1)]
            self.blocks = nn.Sequential(*[MBConv(*c) for c in cfg])
            self.head = nn.Sequential(nn.Conv2d(112, 320, 1, bias=False),
                                      nn.BatchNorm2d(320), SiLU())
            self.fc = nn.Linear(320, 10)

        def forward(self, x):
            x = self.head(self.blocks(self.stem(x)))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    return Net()


class _Transformer:
    @staticmethod
    def make():
        return nn.TransformerEncoderLayer(d_model=256, nhead=4, dim_feedforward=1024,
                                          dropout=0.0, activation="relu", batch_first=True)


# name -> (builder, input shape, classifier?)
def models():
    return {
        "mlp": (mlp, (64, 784), True),
        "resnet18": (resnet18_half, (32, 3, 32, 32), True),
        "mbconv": (mbconv_net, (8, 3, 64, 64), True),
        "transformer": (_Transformer.make, (8, 128, 256), False),
    }


NAMES = ["mlp", "resnet18", "mbconv", "transformer"]


def distinct_values(model):
    """Gives every parameter and buffer whose elements are all equal (a
    fresh BatchNorm's or LayerNorm's scale and shift, its running
    statistics, a bias initialised to zero) small seeded random offsets.
    The ONNX exporter stores tensors with equal contents once: the ten
    BatchNorms of one width would share one scale, one shift and running
    statistics aliasing both, and the training program would train tied
    parameters where PyTorch trains separate ones."""
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():
        for name, t in list(model.named_parameters()) + list(model.named_buffers()):
            if not t.is_floating_point() or t.numel() == 0:
                continue
            flat = t.reshape(-1)
            if not bool((flat == flat[0]).all()):
                continue
            noise = 0.01 * torch.randn(t.shape, generator=g)
            if name.endswith("running_var"):
                noise = noise.abs()  # a variance stays positive
            t.add_(noise)


def build(name):
    make, shape, classifier = models()[name]
    torch.manual_seed(0)
    model = make()
    distinct_values(model)
    model.eval()
    g = torch.Generator().manual_seed(1)
    x = torch.randn(*shape, generator=g)
    with torch.no_grad():
        out = model(x)
    if classifier:
        y = torch.randint(0, out.shape[1], (out.shape[0],), generator=g)
    else:
        y = torch.randn(*out.shape, generator=g)
    return model, x, y


def count_flops(model, x):
    total = [0]

    def conv(mod, inp, out):
        kh, kw = mod.kernel_size
        total[0] += 2 * out.numel() * (mod.in_channels // mod.groups) * kh * kw

    def linear(mod, inp, out):
        total[0] += 2 * out.numel() * mod.in_features

    def attn(mod, inp, out):
        q = inp[0]  # [batch, tokens, d] (batch_first)
        total[0] += 2 * 2 * q.shape[0] * q.shape[1] * q.shape[1] * q.shape[2]
        # the projections: in_proj (3 d x d) and out_proj
        total[0] += 2 * q.shape[0] * q.shape[1] * 4 * q.shape[2] * q.shape[2]

    # training mode (a copy): the transformer layer's inference fast path
    # would bypass its submodules
    model = copy.deepcopy(model)
    model.train()
    hooks = []
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            hooks.append(m.register_forward_hook(conv))
        elif isinstance(m, nn.Linear) and not isinstance(m, nn.modules.linear.NonDynamicallyQuantizableLinear):
            hooks.append(m.register_forward_hook(linear))
        elif isinstance(m, nn.MultiheadAttention):
            hooks.append(m.register_forward_hook(attn))
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return 3 * total[0]


def export(outdir, name):
    base = os.path.join(outdir, name)
    data = os.path.join(base, "train")
    files = [base + s for s in (".onnx", ".flops", ".pt")]
    files += [os.path.join(data, f) for f in ("input.npy", "target.npy")]
    try:
        with open(base + ".version") as f:
            current = f.read().strip() == EXPORT_VERSION
    except OSError:
        current = False
    if current and all(os.path.exists(f) for f in files):
        print(f"{name}: already in {outdir}")
        return
    os.makedirs(data, exist_ok=True)
    model, x, y = build(name)
    # PRESERVE on a model in eval mode: inference-mode BatchNormalization
    # nodes, not folded into the convolutions (Weir's training program
    # computes batch statistics from them, as PyTorch in training mode)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), base + ".onnx", input_names=["input"],
                          output_names=["output"], opset_version=OPSET,
                          training=torch.onnx.TrainingMode.PRESERVE,
                          do_constant_folding=False)
    np.save(os.path.join(data, "input.npy"), x.numpy())
    np.save(os.path.join(data, "target.npy"), y.numpy())
    torch.save(model.state_dict(), base + ".pt")
    flops = count_flops(model, x)
    with open(base + ".flops", "w") as f:
        f.write(f"{flops}\n")
    with open(base + ".version", "w") as f:
        f.write(EXPORT_VERSION + "\n")
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: exported ({params} parameters, {flops / 1e9:.3f} GFLOP per training step)")


def time_torch(outdir, name, threads, reps, warmup):
    base = os.path.join(outdir, name)
    torch.set_num_threads(threads)
    make, _, classifier = models()[name]
    torch.manual_seed(0)
    model = make()
    model.load_state_dict(torch.load(base + ".pt"))
    model.train()
    x = torch.from_numpy(np.load(os.path.join(base, "train", "input.npy")))
    y = torch.from_numpy(np.load(os.path.join(base, "train", "target.npy")))
    loss_fn = nn.CrossEntropyLoss() if classifier else nn.MSELoss()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times = []
    for i in range(warmup + reps):
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        t1 = time.perf_counter()
        if i >= warmup:
            times.append(t1 - t0)
    med = statistics.median(times) * 1e3
    print(f"{name}: PyTorch {torch.__version__}, {threads} thread(s), loss {float(loss):.4f}")
    print(f"ok {med:.3f} min_ms={min(times) * 1e3:.3f} mean_ms={statistics.mean(times) * 1e3:.3f}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cmd", choices=["export", "torch", "list"])
    p.add_argument("args", nargs="*")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    a = p.parse_args()
    if a.cmd == "list":
        print(" ".join(NAMES))
        return 0
    _imports()
    if not a.args:
        p.error("give DIR and model names")
    outdir, names = a.args[0], a.args[1:]
    os.makedirs(outdir, exist_ok=True)
    for n in names:
        if n not in models():
            p.error(f"unknown model {n} (one of {' '.join(NAMES)})")
    if a.cmd == "export":
        for n in names:
            export(outdir, n)
    else:
        for n in names:
            time_torch(outdir, n, a.threads, a.reps, a.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
