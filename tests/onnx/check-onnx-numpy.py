#!/usr/bin/python3
"""check-onnx-numpy.py MODEL.onnx INPUT.npy EXPECTED.npy [--rtol R] [--atol A]

Loads MODEL.onnx with Debian's python3-onnx, runs onnx.checker on it,
evaluates the graph with a small NumPy reference (the operators of the
sample classifiers: Gemm, MatMul, Add, Relu, Sigmoid, Tanh, Conv, MaxPool,
Flatten, Reshape) on INPUT.npy and compares the output with EXPECTED.npy
(|a - b| <= atol + rtol * |b|).  Prints the maximum absolute error; exit
status 0 when they agree, 1 when they do not, 2 for usage or model errors.

onnx 1.12 has no onnx.reference evaluator, hence this one.  Written for
Weir's tests (weir train writes models back; this checks that ONNX tools
load them and compute what Weir computes).
"""

import argparse
import sys

import numpy as np
import onnx
import onnx.numpy_helper


def attrs(node):
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def conv(x, w, b, a):
    n, c, h, wd = x.shape
    m, cg, kh, kw = w.shape
    if a.get("group", 1) != 1 or any(d != 1 for d in a.get("dilations", [1, 1])):
        raise SystemExit("Conv: only group 1 and dilation 1")
    pads = a.get("pads", [0, 0, 0, 0])
    sh, sw = a.get("strides", [1, 1])
    xp = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (xp.shape[2] - kh) // sh + 1
    ow = (xp.shape[3] - kw) // sw + 1
    y = np.zeros((n, m, oh, ow), dtype=np.float64)
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw]
            y += np.einsum("nchw,mc->nmhw", patch, w[:, :, i, j])
    if b is not None:
        y += b.reshape(1, m, 1, 1)
    return y


def maxpool(x, a):
    kh, kw = a["kernel_shape"]
    sh, sw = a.get("strides", [1, 1])
    if any(a.get("pads", [0, 0, 0, 0])):
        raise SystemExit("MaxPool: padding not supported here")
    oh = (x.shape[2] - kh) // sh + 1
    ow = (x.shape[3] - kw) // sw + 1
    y = np.full(x.shape[:2] + (oh, ow), -np.inf)
    for i in range(kh):
        for j in range(kw):
            y = np.maximum(y, x[:, :, i:i + sh * oh:sh, j:j + sw * ow:sw])
    return y


def run(model, x):
    g = model.graph
    env = {t.name: onnx.numpy_helper.to_array(t).astype(np.float64) if onnx.numpy_helper.to_array(t).dtype == np.float32
           else onnx.numpy_helper.to_array(t) for t in g.initializer}
    inputs = [i.name for i in g.input if i.name not in env]
    env[inputs[0]] = x.astype(np.float64)
    for node in g.node:
        a = attrs(node)
        ins = [env[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Gemm":
            A = ins[0].T if a.get("transA", 0) else ins[0]
            B = ins[1].T if a.get("transB", 0) else ins[1]
            y = a.get("alpha", 1.0) * (A @ B)
            if len(ins) > 2 and ins[2] is not None:
                y = y + a.get("beta", 1.0) * ins[2]
        elif op == "MatMul":
            y = ins[0] @ ins[1]
        elif op == "Add":
            y = ins[0] + ins[1]
        elif op == "Relu":
            y = np.maximum(ins[0], 0)
        elif op == "Sigmoid":
            y = 1 / (1 + np.exp(-ins[0]))
        elif op == "Tanh":
            y = np.tanh(ins[0])
        elif op == "Conv":
            y = conv(ins[0], ins[1], ins[2] if len(ins) > 2 else None, a)
        elif op == "MaxPool":
            y = maxpool(ins[0], a)
        elif op == "Flatten":
            axis = a.get("axis", 1)
            y = ins[0].reshape(int(np.prod(ins[0].shape[:axis])), -1)
        elif op == "Reshape":
            y = ins[0].reshape([int(d) for d in ins[1]])
        else:
            raise SystemExit(f"operator {op} (node {node.name}) is not in this reference")
        env[node.output[0]] = y
    return env[g.output[0].name]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("expected")
    p.add_argument("--rtol", type=float, default=1e-4)
    p.add_argument("--atol", type=float, default=1e-5)
    args = p.parse_args()
    try:
        model = onnx.load(args.model)
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:  # the checker raises several kinds
        print(f"{args.model}: {e}", file=sys.stderr)
        return 2
    got = run(model, np.load(args.input))
    want = np.load(args.expected).astype(np.float64)
    if got.shape != want.shape:
        print(f"{args.model}: output shape {got.shape}, expected {want.shape}", file=sys.stderr)
        return 1
    err = float(np.max(np.abs(got - want))) if got.size else 0.0
    ok = bool(np.all(np.abs(got - want) <= args.atol + args.rtol * np.abs(want)))
    print(f"{args.model}: max abs error {err:.3g}: {'agrees' if ok else 'DIFFERS'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
