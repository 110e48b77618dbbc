#!/usr/bin/python3
"""Writes the fixtures of tests/core/test-train-blocks.c (training-mode
building blocks, issue 16 item 3): for every case, train-blocks/<case>/
model.onnx (a small model exported by PyTorch in eval mode with
TrainingMode.PRESERVE, so BatchNormalization stays a node with its running
statistics as initializers) and what K steps of PyTorch give from its
weights: inputs.npy and targets.npy ([K * A, batch, ...]: the batches in
order, A micro-batches per step with accumulation), losses.npy ([K], the
loss of each step; with accumulation the loss of the A micro-batches
together), the parameters after the first step (first_<i>.npy) and after
all K steps (final_<i>.npy), the running statistics after K steps
(buffer_<i>.npy), the trained model's output in eval mode on the first
batch (eval_output.npy, models with batch normalization), the learning
rate of each step (lrs.npy) and
manifest.json (the options in Weir's terms, the parameters and buffers in
ONNX initializer order).  Run with Debian's /usr/bin/python3 (torch 1.13,
onnx):

    /usr/bin/python3 tests/core/data/make-train-blocks.py

The gradient of the first step is (p - first) / lr for the SGD cases.
"""
import io
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "train-blocks")
B, FEAT, C = 5, 6, 3


class BnMlp(torch.nn.Module):
    """Linear -> BatchNorm1d -> ReLU -> Linear, [B, FEAT] -> [B, C]."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(FEAT, 8)
        self.bn = torch.nn.BatchNorm1d(8, momentum=0.2)
        self.fc2 = torch.nn.Linear(8, C)

    def forward(self, x):
        return self.fc2(torch.relu(self.bn(self.fc1(x))))


class BnConv(torch.nn.Module):
    """Conv2d -> BatchNorm2d -> ReLU -> Linear, [B, 2, 4, 4] -> [B, C]."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(2, 3, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(3)
        self.fc = torch.nn.Linear(3 * 4 * 4, C)

    def forward(self, x):
        y = torch.relu(self.bn(self.conv(x)))
        return self.fc(y.reshape(x.shape[0], -1))


class Mlp(torch.nn.Module):
    """Linear -> Tanh -> Linear, [B, FEAT] -> [B, C]."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(FEAT, 7)
        self.fc2 = torch.nn.Linear(7, C)

    def forward(self, x):
        return self.fc2(torch.tanh(self.fc1(x)))


def warmup_then(opt, n, start, after):
    """LinearLR for n steps, then `after` (SequentialLR), as Weir's
    warm-up."""
    first = torch.optim.lr_scheduler.LinearLR(opt, start_factor=start,
                                              total_iters=n)
    if after is None:
        return first
    return torch.optim.lr_scheduler.SequentialLR(opt, [first, after],
                                                 milestones=[n])


# name: model, loss, steps K, options (Weir's names), scheduler factory
CASES = {
    "bn_mlp_sgd": ("bn_mlp", "cross-entropy", 3,
                   dict(optimizer="sgd", lr=0.1), None),
    "bn_conv_momentum": ("bn_conv", "cross-entropy", 3,
                         dict(optimizer="momentum", lr=0.05, momentum=0.9),
                         None),
    "lr_step_sgd": ("mlp", "mse", 12,
                    dict(optimizer="sgd", lr=0.2, lr_schedule="step",
                         lr_step_size=3, lr_gamma=0.5), None),
    "lr_cosine_adam": ("mlp", "mse", 14,
                       dict(optimizer="adam", lr=0.05, lr_schedule="cosine",
                            total_steps=10, lr_min=0.005), None),
    "lr_warmup_sgd": ("mlp", "mse", 8,
                      dict(optimizer="sgd", lr=0.3, warmup_steps=4,
                           warmup_start_factor=0.25), None),
    "lr_warmup_cosine_momentum": ("mlp", "cross-entropy", 14,
                                  dict(optimizer="momentum", lr=0.1,
                                       momentum=0.9, lr_schedule="cosine",
                                       warmup_steps=4, total_steps=12), None),
    "lr_warmup_step_adam": ("mlp", "mse", 10,
                            dict(optimizer="adam", lr=0.02, lr_schedule="step",
                                 warmup_steps=3, lr_step_size=2,
                                 lr_gamma=0.7), None),
    "clip_sgd": ("mlp", "mse", 3,
                 dict(optimizer="sgd", lr=0.1, clip_grad_norm=0.3), None),
    "clip_adam_cosine": ("mlp", "cross-entropy", 4,
                         dict(optimizer="adam", lr=0.01, clip_grad_norm=0.05,
                              lr_schedule="cosine", total_steps=4), None),
    "accumulate_sgd": ("mlp", "mse", 2,
                       dict(optimizer="sgd", lr=0.1, accumulate=3), None),
    "accumulate_ce_sgd_clip": ("mlp", "cross-entropy", 2,
                               dict(optimizer="sgd", lr=0.5, accumulate=2,
                                    clip_grad_norm=0.2), None),
}


def scheduler(opt, o):
    """The torch.optim.lr_scheduler equivalent of Weir's options."""
    n = o.get("warmup_steps", 0)
    kind = o.get("lr_schedule", "constant")
    after = None
    if kind == "step":
        after = torch.optim.lr_scheduler.StepLR(opt, step_size=o["lr_step_size"],
                                                gamma=o.get("lr_gamma", 0.1))
    elif kind == "cosine":
        after = torch.optim.lr_scheduler.CosineAnnealingLR(
            opt, T_max=o["total_steps"] - n, eta_min=o.get("lr_min", 0.0))
    if n > 0:
        return warmup_then(opt, n, o.get("warmup_start_factor", 1.0 / n), after)
    return after


def optimizer(params, o):
    if o["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=o["lr"])
    if o["optimizer"] == "momentum":
        return torch.optim.SGD(params, lr=o["lr"], momentum=o["momentum"])
    return torch.optim.Adam(params, lr=o["lr"], betas=(0.9, 0.999), eps=1e-8)


def export(model, example, path):
    model.eval()
    buf = io.BytesIO()
    torch.onnx.export(model, (example,), buf, input_names=["input"],
                      output_names=["output"], opset_version=13,
                      training=torch.onnx.TrainingMode.PRESERVE,
                      do_constant_folding=False)
    with open(path, "wb") as f:
        f.write(buf.getvalue())


def make(name, kind, loss, steps, opts, seed):
    torch.manual_seed(seed)
    if kind == "bn_mlp":
        model, shape = BnMlp(), (FEAT,)
    elif kind == "bn_conv":
        model, shape = BnConv(), (2, 4, 4)
    else:
        model, shape = Mlp(), (FEAT,)
    with torch.no_grad():  # running statistics that are not the defaults
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.5, 0.5)
                m.running_var.uniform_(0.5, 1.5)
    acc = opts.get("accumulate", 1)
    x = torch.randn(steps * acc, B, *shape)
    if loss == "cross-entropy":
        t = torch.randint(0, C, (steps * acc, B))
    else:
        t = torch.randn(steps * acc, B, C)
    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    export(model, x[0], os.path.join(d, "model.onnx"))
    params = list(model.named_parameters())
    buffers = [(n, b) for n, b in model.named_buffers()
               if n.endswith("running_mean") or n.endswith("running_var")]
    model.train()
    opt = optimizer([p for _, p in params], opts)
    sched = scheduler(opt, opts)
    losses, lrs = [], []
    for k in range(steps):
        lrs.append(opt.param_groups[0]["lr"])
        opt.zero_grad()
        if acc == 1:
            out = model(x[k])
            lv = (F.cross_entropy(out, t[k]) if loss == "cross-entropy"
                  else F.mse_loss(out, t[k]))
        else:
            # one step at A times the batch (the reference of accumulation)
            xb = x[k * acc:(k + 1) * acc].reshape(acc * B, *shape)
            tb = t[k * acc:(k + 1) * acc].reshape(acc * B, *t.shape[2:])
            out = model(xb)
            lv = (F.cross_entropy(out, tb) if loss == "cross-entropy"
                  else F.mse_loss(out, tb))
        lv.backward()
        if "clip_grad_norm" in opts:
            torch.nn.utils.clip_grad_norm_([p for _, p in params],
                                           opts["clip_grad_norm"])
        opt.step()
        if sched is not None:
            sched.step()
        losses.append(lv.item())
        if k == 0:
            for i, (_, p) in enumerate(params):
                np.save(os.path.join(d, f"first_{i}.npy"), p.detach().numpy())
    for i, (_, p) in enumerate(params):
        np.save(os.path.join(d, f"final_{i}.npy"), p.detach().numpy())
    for i, (_, b) in enumerate(buffers):
        np.save(os.path.join(d, f"buffer_{i}.npy"), b.numpy())
    if buffers:  # the trained model in eval mode (running statistics)
        model.eval()
        with torch.no_grad():
            np.save(os.path.join(d, "eval_output.npy"), model(x[0]).numpy())
    np.save(os.path.join(d, "inputs.npy"), x.numpy())
    np.save(os.path.join(d, "targets.npy"), t.numpy())
    np.save(os.path.join(d, "losses.npy"), np.array(losses, dtype=np.float32))
    np.save(os.path.join(d, "lrs.npy"), np.array(lrs, dtype=np.float64))
    manifest = {"loss": loss, "steps": steps, "options": opts,
                "parameters": [n for n, _ in params],
                "buffers": [n for n, _ in buffers],
                "torch": torch.__version__}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    for i, (name, (kind, loss, steps, opts, _)) in enumerate(
            sorted(CASES.items())):
        make(name, kind, loss, steps, opts, 200 + i)
        print(name)
