#!/usr/bin/python3
"""Writes the loss fixtures of tests/core/test-train-losses.c: for every
case, losses/<case>/model.onnx (a small linear model, exported by PyTorch)
and what one SGD step of PyTorch gives from its weights on a fixed batch:
input.npy, target.npy, loss.npy (the loss value, per element for reduction
'none'), grad_<i>.npy and sgd_<i>.npy for each parameter, and
manifest.json (the loss options as Weir's, the parameters in ONNX
initializer order).  Run with Debian's /usr/bin/python3 (torch 1.13, onnx):

    /usr/bin/python3 tests/core/data/make-losses.py
"""
import json
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "losses")
B, T, FEAT, C = 3, 4, 4, 5
LR = 0.1


class Seq(torch.nn.Module):
    """[B, T, FEAT] -> [B, T, C] (Gemm over the flattened tokens); layout
    'nct' transposes to [B, C, T]; log_softmax ends in LogSoftmax."""

    def __init__(self, layout="ntc", log_softmax=False):
        super().__init__()
        self.fc = torch.nn.Linear(FEAT, C)
        self.layout, self.log_softmax = layout, log_softmax

    def forward(self, x):
        y = self.fc(x.reshape(-1, FEAT)).reshape(x.shape[0], x.shape[1], C)
        if self.log_softmax:
            y = torch.log_softmax(y, dim=-1)
        if self.layout == "nct":
            y = y.transpose(1, 2)
        return y


class Flat(torch.nn.Module):
    """[B, FEAT] -> [B, C]."""

    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(FEAT, C)

    def forward(self, x):
        return self.fc(x)


WEIGHTS = [0.5, 2.0, 1.0, 0.25, 1.5]

# name: (model, input shape, loss, options)
CASES = {
    "ce_seq": ("seq", "ntc", dict(loss="cross-entropy", class_axis=-1)),
    "ce_seq_i32_ii_smooth": ("seq", "ntc", dict(
        loss="cross-entropy", class_axis=-1, label_dtype="i32",
        ignore_index=2, label_smoothing=0.1)),
    "ce_weights_ii_smooth": ("flat", None, dict(
        loss="cross-entropy", class_weights=WEIGHTS, ignore_index=3,
        label_smoothing=0.2)),
    "ce_seq_weights_sum": ("seq", "ntc", dict(
        loss="cross-entropy", class_axis=2, class_weights=WEIGHTS,
        reduction="sum")),
    "ce_seq_none_ii": ("seq", "ntc", dict(
        loss="cross-entropy", class_axis=-1, reduction="none",
        ignore_index=0)),
    "ce_nct_weights_smooth_sum": ("seq", "nct", dict(
        loss="cross-entropy", class_weights=WEIGHTS, label_smoothing=0.3,
        reduction="sum", ignore_index=4)),
    "nll_seq_weights_ii": ("seq_log", "ntc", dict(
        loss="nll", class_axis=-1, class_weights=WEIGHTS, ignore_index=1)),
    "nll_nct_sum": ("seq_log", "nct", dict(loss="nll", reduction="sum")),
    "bce": ("flat", None, dict(loss="bce-with-logits")),
    "bce_sum": ("flat", None, dict(loss="bce-with-logits", reduction="sum")),
    "l1": ("flat", None, dict(loss="l1")),
    "huber": ("seq", "ntc", dict(loss="huber", huber_delta=0.5)),
    "huber_none": ("flat", None, dict(loss="huber", reduction="none")),
    "mse_sum": ("flat", None, dict(loss="mse", reduction="sum")),
}


def torch_loss(opts, out, target):
    red = opts.get("reduction", "mean")
    loss = opts["loss"]
    if loss in ("cross-entropy", "nll"):
        axis = opts.get("class_axis", 1) % out.dim()
        logits = out.movedim(axis, 1)
        w = torch.tensor(opts["class_weights"]) if "class_weights" in opts else None
        ii = opts.get("ignore_index", -100)
        t = target.long()
        if loss == "nll":
            return F.nll_loss(logits, t, weight=w, ignore_index=ii, reduction=red)
        return F.cross_entropy(logits, t, weight=w, ignore_index=ii,
                               reduction=red,
                               label_smoothing=opts.get("label_smoothing", 0.0))
    if loss == "bce-with-logits":
        return F.binary_cross_entropy_with_logits(out, target, reduction=red)
    if loss == "l1":
        return F.l1_loss(out, target, reduction=red)
    if loss == "huber":
        return F.huber_loss(out, target, reduction=red,
                            delta=opts.get("huber_delta", 1.0))
    return F.mse_loss(out, target, reduction=red)


def make(name, kind, layout, opts, seed):
    torch.manual_seed(seed)
    if kind == "flat":
        model, x = Flat(), torch.randn(B, FEAT)
    else:
        model = Seq(layout, log_softmax=kind == "seq_log")
        x = torch.randn(B, T, FEAT)
    with torch.no_grad():
        out = model(x)
    rng = np.random.default_rng(seed)
    if opts["loss"] in ("cross-entropy", "nll"):
        axis = opts.get("class_axis", 1) % out.dim()
        shape = [d for i, d in enumerate(out.shape) if i != axis]
        labels = rng.integers(0, C, size=shape)
        dtype = np.int32 if opts.get("label_dtype") == "i32" else np.int64
        target_np = labels.astype(dtype)
        target = torch.from_numpy(labels.astype(np.int64))
    elif opts["loss"] == "bce-with-logits":
        target_np = rng.random(size=tuple(out.shape)).astype(np.float32)
        target = torch.from_numpy(target_np)
    else:
        target_np = rng.normal(size=tuple(out.shape)).astype(np.float32)
        target = torch.from_numpy(target_np)

    d = os.path.join(HERE, name)
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(model, x, os.path.join(d, "model.onnx"),
                      input_names=["input"], output_names=["output"],
                      opset_version=13)
    params = list(model.named_parameters())
    loss = torch_loss(opts, model(x), target)
    loss.backward(torch.ones_like(loss))
    entries = []
    for i, (pname, p) in enumerate(params):
        np.save(os.path.join(d, f"grad_{i}.npy"), p.grad.numpy())
        np.save(os.path.join(d, f"sgd_{i}.npy"),
                (p.detach() - LR * p.grad).numpy())
        entries.append({"name": pname, "grad": f"grad_{i}.npy",
                        "sgd": f"sgd_{i}.npy"})
    np.save(os.path.join(d, "input.npy"), x.numpy())
    np.save(os.path.join(d, "target.npy"), target_np)
    np.save(os.path.join(d, "loss.npy"), loss.detach().numpy().astype(np.float32))
    manifest = {"options": opts, "lr": LR, "parameters": entries,
                "torch": torch.__version__}
    with open(os.path.join(d, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    for i, (name, (kind, layout, opts)) in enumerate(sorted(CASES.items())):
        make(name, kind, layout, opts, 100 + i)
        print(name)
