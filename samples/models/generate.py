#!/usr/bin/python3
"""generate.py — the bundled sample models and their reference data.

Defines four small PyTorch models (and a batch-64 export of LeNet for the
benchmark), exports each to ONNX and writes, next to this script:

    <name>.onnx                 the model (opset 13)
    <name>/input_0.pb           the reference input, an ONNX TensorProto
    <name>/output_0.pb          PyTorch's output on it, an ONNX TensorProto
    <name>/input_0.npy          the same two tensors as NumPy arrays
    <name>/output_0.npy
    <name>/input_<k>.pb, ...    further data sets (k >= 1) at other batch
                                sizes, for models with a symbolic batch

Run it with Debian's interpreter, which has python3-torch, python3-onnx and
python3-numpy (a `python3` earlier on PATH may not):

    /usr/bin/python3 samples/models/generate.py

Everything is deterministic: weights come from torch.manual_seed, inputs
from a seeded torch.Generator, computation runs on the CPU with one thread
and deterministic algorithms, and nothing is downloaded.  Running the
script twice gives the same bytes in every file (`--check` verifies that
the files on disk are what the script would write, without writing).

The tensors in the .pb files are named after the graph's input and output
("input", "output"), as in the ONNX backend test data
(test_data_set_0/input_0.pb).
"""

import argparse
import collections
import hashlib
import importlib
import io
import json
import os
import sys
import warnings

import numpy as np
import onnx
import onnx.numpy_helper
import onnx.shape_inference
import torch
from torch import nn

OPSET = 13
HERE = os.path.dirname(os.path.abspath(__file__))


# ---- the models ----------------------------------------------------------


class MLP(nn.Module):
    """64 -> 128 -> ReLU -> 64 -> ReLU -> 10."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 128)
        self.fc2 = nn.Linear(128, 64)
        self.fc3 = nn.Linear(64, 10)

    def forward(self, x):
        x = torch.relu(self.fc1(x))
        x = torch.relu(self.fc2(x))
        return self.fc3(x)


class LeNet(nn.Module):
    """A LeNet-style CNN for 1x8x8 digits.

    [N,1,8,8] -conv3x3 pad1-> [N,6,8,8] -pool2-> [N,6,4,4]
    -conv3x3-> [N,16,2,2] -flatten-> [N,64] -> 32 -> 10
    """

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(6, 16, 3)
        self.fc1 = nn.Linear(16 * 2 * 2, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv1(x)))
        x = torch.relu(self.conv2(x))
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        return self.fc2(x)


class ResidualBlock(nn.Module):
    """conv-bn-relu-conv-bn, plus the identity, then ReLU."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + x)


class ResNet(nn.Module):
    """Stem conv 3->16 + BN + ReLU, two residual blocks, global average
    pool, linear 16 -> 10."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(16)
        self.block1 = ResidualBlock(16)
        self.block2 = ResidualBlock(16)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        x = self.block2(self.block1(x))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)


class DigitsMLP(nn.Module):
    """The digits classifier: 64 pixels -> 64 -> ReLU -> 10 classes."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(64, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class DigitsCNN(nn.Module):
    """A small CNN for the 1x8x8 digits:
    [N,1,8,8] -conv3x3 pad1-> [N,8,8,8] -ReLU, pool2-> [N,8,4,4]
    -flatten-> [N,128] -> 32 -> ReLU -> 10
    """

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(1, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(8 * 4 * 4, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.conv(x)))
        x = torch.flatten(x, 1)
        return self.fc2(torch.relu(self.fc1(x)))


def make_mlp():
    return MLP()


def make_digits_mlp():
    return DigitsMLP()


def make_digits_cnn():
    return DigitsCNN()


def make_lenet():
    return LeNet()


def make_resnet():
    model = ResNet()
    # Non-trivial batch-norm parameters: a random affine part, and running
    # statistics gathered from a few training-mode passes over shifted,
    # scaled random data.
    gen = torch.Generator().manual_seed(1234)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            with torch.no_grad():
                m.weight.uniform_(0.5, 1.5, generator=gen)
                m.bias.normal_(0.0, 0.1, generator=gen)
    model.train()
    with torch.no_grad():
        for _ in range(5):
            model(torch.randn(8, 3, 16, 16, generator=gen) * 2.0 + 0.5)
    return model


def make_transformer():
    # ReLU keeps the graph to plain ops at opset 13 (GELU would add an Erf).
    model = nn.TransformerEncoderLayer(
        d_model=32,
        nhead=4,
        dim_feedforward=64,
        dropout=0.0,
        activation="relu",
        batch_first=True,
    )
    # PyTorch starts the attention biases at zero and the layer norms at
    # weight 1, bias 0.  Left so, the exporter would also merge the equal
    # initializers into one and alias the others through Identity nodes.
    # Random values make every parameter matter and keep them distinct.
    gen = torch.Generator().manual_seed(5678)
    with torch.no_grad():
        model.self_attn.in_proj_bias.normal_(0.0, 0.1, generator=gen)
        model.self_attn.out_proj.bias.normal_(0.0, 0.1, generator=gen)
        for norm in (model.norm1, model.norm2):
            norm.weight.uniform_(0.5, 1.5, generator=gen)
            norm.bias.normal_(0.0, 0.1, generator=gen)
    return model


# name, constructor, seed, input shape, export options
MODELS = [
    ("mlp", make_mlp, 1, (4, 64), dict(dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})),
    ("lenet", make_lenet, 2, (4, 1, 8, 8), dict()),
    # The same LeNet (same seed, same weights) exported for batch 64: the
    # benchmark's size (tests/bench/).  lenet.onnx keeps its batch of 4.
    ("lenet64", make_lenet, 2, (64, 1, 8, 8), dict()),
    # TrainingMode.EVAL would run the exporter's eval peephole, which folds
    # BatchNormalization into the preceding Conv whatever
    # do_constant_folding says.  PRESERVE on a model in eval mode exports
    # inference-mode BatchNormalization nodes and skips that fusion.
    ("resnet", make_resnet, 3, (2, 3, 16, 16), dict(training=torch.onnx.TrainingMode.PRESERVE, do_constant_folding=False)),
    ("transformer", make_transformer, 4, (2, 8, 32), dict()),
    # The models `weir train` trains on scikit-learn's digits (batch symbolic).
    ("digits_mlp", make_digits_mlp, 5, (8, 64), dict(dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})),
    ("digits_cnn", make_digits_cnn, 6, (8, 1, 8, 8), dict(dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}})),
]

# One training step per model, from the reference input: the loss, the
# optimizers and their settings (mirrored in <name>/train/manifest.json).
TRAIN_SGD = dict(lr=0.1)
TRAIN_ADAM = dict(lr=0.01, betas=(0.9, 0.999), eps=1e-8)

# Further data sets <name>/input_<k>.pb, output_<k>.pb (k >= 1) for models
# with a symbolic batch: name -> input shapes.  Their inputs come from their
# own generator (seed 2000 + 100 * k + model seed), so data set 0 does not
# change.  mlp at batch 64 is the benchmark's size (tests/bench/).
EXTRA_DATA = {
    "mlp": [(64, 64)],
}


# ---- export --------------------------------------------------------------


def export_onnx(model, example, options):
    """Exports model to ONNX and returns the ModelProto with its doc strings
    cleared (PyTorch 1.13 writes none, but other versions can record source
    locations there, which would make the bytes depend on the checkout)."""
    kwargs = dict(
        opset_version=OPSET,
        do_constant_folding=True,
        input_names=["input"],
        output_names=["output"],
        training=torch.onnx.TrainingMode.EVAL,
    )
    kwargs.update(options)
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (example,), buf, **kwargs)
    proto = onnx.load_from_string(buf.getvalue())
    proto.doc_string = ""
    clear_doc_strings(proto.graph)
    return proto


def clear_doc_strings(graph):
    graph.doc_string = ""
    for node in graph.node:
        node.doc_string = ""
        for attr in node.attribute:
            if attr.HasField("g"):
                clear_doc_strings(attr.g)
            for g in attr.graphs:
                clear_doc_strings(g)


def op_counts(graph):
    return collections.Counter(node.op_type for node in graph.node)


def shape_of(value_info):
    dims = []
    for d in value_info.type.tensor_type.shape.dim:
        dims.append(d.dim_param if d.HasField("dim_param") else str(d.dim_value))
    return "[" + ", ".join(dims) + "]"


def check_onnx(name, proto, output):
    """onnx.checker with full shape inference; the inferred output shape
    must agree with PyTorch's output.  Returns an onnx.reference evaluator
    for the model, or None when this onnx has none (before 1.13)."""
    onnx.checker.check_model(proto, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(proto, check_type=True, strict_mode=True)
    out = inferred.graph.output[0]
    dims = out.type.tensor_type.shape.dim
    for d, n in zip(dims, output.shape):
        if d.HasField("dim_value") and d.dim_value != n:
            raise SystemExit(f"{name}: inferred output shape {shape_of(out)} does not match {list(output.shape)}")
    if len(dims) != output.ndim:
        raise SystemExit(f"{name}: inferred output rank {len(dims)} does not match {output.ndim}")
    try:
        reference = importlib.import_module("onnx.reference")  # onnx >= 1.13
    except ImportError:
        return None
    return reference.ReferenceEvaluator(proto)


# ---- one training step ---------------------------------------------------


def match_initializers(proto, model):
    """Pairs each ONNX initializer with the PyTorch parameter or buffer it
    was exported from: equal values, or equal after a transpose (the
    exporter folds `weight.T` into a MatMul operand).  Returns a list of
    (onnx name, torch name, transposed, is_parameter)."""
    tensors = [(n, p.detach().numpy(), True) for n, p in model.named_parameters()]
    tensors += [(n, b.numpy(), False) for n, b in model.named_buffers() if b.dtype.is_floating_point]
    pairs = []
    for init in proto.graph.initializer:
        value = onnx.numpy_helper.to_array(init)
        if value.dtype != np.float32:
            continue
        found = []
        for tname, t, is_param in tensors:
            if t.shape == value.shape and np.array_equal(t, value):
                found.append((tname, False, is_param))
            elif t.ndim == 2 and t.T.shape == value.shape and np.array_equal(t.T, value):
                found.append((tname, True, is_param))
        if len(found) != 1:
            raise SystemExit(f"{init.name}: {len(found)} PyTorch tensors have its value; cannot pair it")
        pairs.append((init.name,) + found[0])
    return pairs


def train_step(name, make, seed, model, proto, x):
    """One training step in training mode from the model's weights, with
    SGD and with Adam.  Classifiers (output [N, 10]) use the mean softmax
    cross-entropy against seeded labels, the transformer the mean squared
    error against a seeded target.  Returns (files, summary)."""
    import copy

    gen = torch.Generator().manual_seed(2000 + seed)
    with torch.no_grad():
        out_shape = model(x).shape
    if len(out_shape) == 2:
        loss_name = "softmax-cross-entropy"
        target = torch.randint(0, out_shape[1], (out_shape[0],), generator=gen)
        loss_fn = nn.CrossEntropyLoss()
    else:
        loss_name = "mse"
        target = torch.randn(*out_shape, generator=gen)
        loss_fn = nn.MSELoss()

    pairs = match_initializers(proto, model)
    results = {}
    for opt_name in ("sgd", "adam"):
        m = copy.deepcopy(model)
        m.train()
        if opt_name == "sgd":
            opt = torch.optim.SGD(m.parameters(), **TRAIN_SGD)
        else:
            opt = torch.optim.Adam(m.parameters(), **TRAIN_ADAM)
        opt.zero_grad()
        loss = loss_fn(m(x), target)
        loss.backward()
        params = dict(m.named_parameters())
        tensors = dict(params)
        tensors.update(dict(m.named_buffers()))
        grads = {n: p.grad.detach().clone() for n, p in params.items()}
        opt.step()
        results[opt_name] = (float(loss.detach()), grads, {n: t.detach().clone() for n, t in tensors.items()})

    loss_sgd, grads, _ = results["sgd"]
    loss_adam = results["adam"][0]
    if loss_sgd != loss_adam:
        raise SystemExit(f"{name}: the two training passes disagree on the loss")

    def onnx_layout(t, transposed):
        a = t.numpy().astype(np.float32, copy=False)
        return np.ascontiguousarray(a.T if transposed else a)

    files = [
        ("input.npy", npy_bytes(x.numpy().astype(np.float32, copy=False))),
        ("target.npy", npy_bytes(target.numpy() if loss_name == "mse" else target.numpy().astype(np.int64))),
        ("loss.npy", npy_bytes(np.array([loss_sgd], dtype=np.float32))),
    ]
    entries = []
    for i, (oname, tname, transposed, is_param) in enumerate(pairs):
        entry = {"name": oname, "torch": tname, "transposed": transposed, "kind": "parameter" if is_param else "buffer"}
        if is_param:
            entry["grad"] = f"grad_{i}.npy"
            files.append((entry["grad"], npy_bytes(onnx_layout(grads[tname], transposed))))
        for opt_name in ("sgd", "adam"):
            entry[opt_name] = f"{opt_name}_{i}.npy"
            files.append((entry[opt_name], npy_bytes(onnx_layout(results[opt_name][2][tname], transposed))))
        entries.append(entry)
    manifest = {
        "model": name + ".onnx",
        "mode": "training (batch statistics for BatchNormalization)",
        "loss": loss_name,
        "reduction": "mean",
        "input": "input.npy",
        "target": "target.npy",
        "loss_value": "loss.npy",
        "sgd": {"lr": TRAIN_SGD["lr"]},
        "adam": {"lr": TRAIN_ADAM["lr"], "beta1": TRAIN_ADAM["betas"][0], "beta2": TRAIN_ADAM["betas"][1], "epsilon": TRAIN_ADAM["eps"]},
        "initializers": entries,
    }
    files.append(("manifest.json", (json.dumps(manifest, indent=1, sort_keys=True) + "\n").encode()))
    summary = f"training step: {loss_name} loss {loss_sgd:.6f}, {sum(e['kind'] == 'parameter' for e in entries)} parameters, {sum(e['kind'] == 'buffer' for e in entries)} buffers"
    return files, summary


# ---- files ---------------------------------------------------------------


def npy_bytes(arr):
    buf = io.BytesIO()
    np.save(buf, arr, allow_pickle=False)
    return buf.getvalue()


def pb_bytes(arr, name):
    return onnx.numpy_helper.from_array(arr, name).SerializeToString()


def data_files(out_dir, name, k, x_np, y_np):
    """The files of data set k: (path, bytes) pairs."""
    return [
        (os.path.join(out_dir, name, f"input_{k}.pb"), pb_bytes(x_np, "input")),
        (os.path.join(out_dir, name, f"output_{k}.pb"), pb_bytes(y_np, "output")),
        (os.path.join(out_dir, name, f"input_{k}.npy"), npy_bytes(x_np)),
        (os.path.join(out_dir, name, f"output_{k}.npy"), npy_bytes(y_np)),
    ]


def write_file(path, data, check, problems):
    rel = os.path.relpath(path, HERE)
    if check:
        try:
            with open(path, "rb") as f:
                old = f.read()
        except FileNotFoundError:
            problems.append(f"{rel}: missing")
            return
        if old != data:
            problems.append(f"{rel}: differs from what the generator writes")
        return
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare the files on disk with what would be written; write nothing")
    parser.add_argument("--out", default=HERE, help="output directory (default: the script's directory)")
    args = parser.parse_args()
    out_dir = os.path.abspath(args.out)

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.backends.mkldnn.enabled = False

    problems = []
    for name, make, seed, shape, options in MODELS:
        torch.manual_seed(seed)
        model = make()
        model.eval()
        gen = torch.Generator().manual_seed(1000 + seed)
        x = torch.randn(*shape, generator=gen)
        # Computed with autograd enabled, as during export: under no_grad
        # the encoder layer would take PyTorch's fused inference path
        # instead of the operators the ONNX graph records.
        y = model(x).detach()
        x_np = x.numpy().astype(np.float32, copy=False)
        y_np = np.ascontiguousarray(y.numpy().astype(np.float32, copy=False))

        proto = export_onnx(model, x, options)
        evaluator = check_onnx(name, proto, y_np)
        if evaluator is None:
            note = f"onnx.reference not available (onnx {onnx.__version__}): numerical check of the ONNX graph skipped"
        else:
            got = evaluator.run(None, {"input": x_np})[0]
            err = float(np.max(np.abs(got - y_np)))
            if not np.allclose(got, y_np, rtol=1e-4, atol=1e-5):
                raise SystemExit(f"{name}: onnx.reference output differs from PyTorch (max abs error {err:g})")
            note = f"onnx.reference matches PyTorch (max abs error {err:g})"

        files = [(os.path.join(out_dir, name + ".onnx"), proto.SerializeToString())]
        files += data_files(out_dir, name, 0, x_np, y_np)
        for k, extra_shape in enumerate(EXTRA_DATA.get(name, []), start=1):
            gen_k = torch.Generator().manual_seed(2000 + 100 * k + seed)
            x_k = torch.randn(*extra_shape, generator=gen_k)
            y_k = model(x_k).detach()
            files += data_files(
                out_dir,
                name,
                k,
                x_k.numpy().astype(np.float32, copy=False),
                np.ascontiguousarray(y_k.numpy().astype(np.float32, copy=False)),
            )
        step_files, step_note = train_step(name, make, seed, model, proto, x)
        files += [(os.path.join(out_dir, name, "train", f), data) for f, data in step_files]
        g = proto.graph
        counts = op_counts(g)
        print(f"{name}: opset {proto.opset_import[0].version}, input {shape_of(g.input[0])}, output {shape_of(g.output[0])}, "
              f"{len(g.node)} nodes, {len(g.initializer)} initializers "
              f"({sum(int(np.prod(t.dims)) for t in g.initializer)} values)")
        print("  ops: " + ", ".join(f"{op} {n}" for op, n in sorted(counts.items())))
        print(f"  {note}")
        print(f"  {step_note}")
        for path, data in files:
            write_file(path, data, args.check, problems)
            print(f"  {os.path.relpath(path, out_dir)}  {len(data)} bytes  sha256 {hashlib.sha256(data).hexdigest()[:16]}")

    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
