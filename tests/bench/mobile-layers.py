#!/usr/bin/env python3
"""mobile-layers.py — per-layer times of a CNN in Weir and in ONNX Runtime,
side by side (docs/performance.md, "Mobile networks against ONNX Runtime,
layer by layer").

    /usr/bin/python3 tests/bench/mobile-layers.py MODEL.onnx [--weir build/weir]
        [--threads 1] [--reps 30] [--rounds 2] [--ort PKG] [--per-layer]

Weir: `weir profile MODEL -O2 --format csv` (per node, median of --reps).
ONNX Runtime: tests/bench/ort-profile.cjs (the session of peer-ort.cjs with
enableProfiling), per kernel the median of --reps runs.  The two run
alternately, --rounds times, and the best round of each node is kept.

Both sides' nodes are attributed to a *layer* of the ONNX model by name:
Weir labels nodes with the ONNX node's name (the fused activation and
residual live in the convolution's node), ONNX Runtime names its fused
NCHWc nodes after the tensor they write, which is mapped back to the ONNX
node producing it (its fused SiLU, QuickGelu, after the Mul it replaced;
its layout conversions, ReorderInput/Output, are "other").  A layer is the node's path (torchvision's module
path) up to the block it belongs to (`conv.1`, `block.2`; the squeeze-
and-excitation pooling, FCs and gate in one), and its kind comes from
its convolution: stem, expand 1x1, depthwise KxK sN, project 1x1, SE,
head 1x1, classifier.  Prints the per-kind table (layers, Weir us, ORT
us, ratio) and with --per-layer one row per layer.  Not a test.
"""
import argparse
import collections
import csv
import io
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

import onnx
from onnx import shape_inference

SUB = re.compile(r".*\.\d+\.\d+$")
SE_PARTS = {"avgpool", "fc1", "fc2", "activation", "scale_activation"}


def layer_key(name):
    path = name.rsplit("/", 1)[0] if "/" in name else name
    while "/" in path:
        last = path.rsplit("/", 1)[1]
        if SUB.match(last) or last in SE_PARTS:
            path = path.rsplit("/", 1)[0]
        else:
            break
    return path or name


def model_layers(path):
    """key -> dict(kind, map, order); tensor name -> producing node name."""
    m = shape_inference.infer_shapes(onnx.load(path))
    shapes = {}
    for vi in list(m.graph.value_info) + list(m.graph.input) + list(m.graph.output):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    inits = {i.name: list(i.dims) for i in m.graph.initializer}
    producer, layers = {}, collections.OrderedDict()
    convs = [n for n in m.graph.node if n.op_type == "Conv"]
    big = [n for n in convs if shapes.get(n.output[0], [0, 0, 0, 0])[2] > 1]
    for n in m.graph.node:
        for o in n.output:
            producer[o] = n.name
        key = layer_key(n.name)
        lay = layers.setdefault(key, {"kind": None, "map": "", "order": len(layers)})
        if n.op_type == "GlobalAveragePool" and "avgpool" in n.name:
            lay["kind"] = "SE (pool, FCs, gate)"
        if n.op_type == "Gemm" or n.op_type == "MatMul":
            lay["kind"] = lay["kind"] or "classifier"
        if n.op_type != "Conv" or lay["kind"]:
            continue
        a = {x.name: onnx.helper.get_attribute_value(x) for x in n.attribute}
        w = inits.get(n.input[1]) or shapes.get(n.input[1])
        xs, ys = shapes.get(n.input[0]), shapes.get(n.output[0])
        if not w or not xs or not ys:
            lay["kind"] = "conv"
            continue
        k = "%dx%d" % (w[2], w[3])
        s = a.get("strides", [1, 1])[0]
        cin, cout = xs[1], ys[1]
        lay["map"] = "%dx%dx%d -> %dx%dx%d" % (cin, xs[2], xs[3], cout, ys[2], ys[3])
        if a.get("group", 1) > 1:
            lay["kind"] = "depthwise %s s%d" % (k, s)
        elif n is convs[0]:
            lay["kind"] = "stem %s s%d" % (k, s)
        elif n is big[-1] and k == "1x1":
            lay["kind"] = "head 1x1"
        elif k == "1x1":
            lay["kind"] = "expand 1x1" if cout > cin else "project 1x1"
        else:
            lay["kind"] = "conv %s s%d" % (k, s)
    for lay in layers.values():
        lay["kind"] = lay["kind"] or "other"
    return layers, producer


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("%s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


def weir_times(o, threads):
    out = run([o.weir, "profile", o.model, "-O2", "--threads", str(threads),
               "--reps", str(o.reps), "--format", "csv"])
    t = collections.defaultdict(float)
    for row in csv.DictReader(io.StringIO(out)):
        t[row["label"]] += float(row["seconds"]) * 1e6
    return t


def ort_times(o, threads, tmp, producer):
    inp = os.path.join(tmp, "input.npy")
    out = run(["node", os.path.join(os.path.dirname(__file__), "ort-profile.cjs"),
               o.ort, o.model, inp, str(threads), str(o.reps + 5),
               os.path.join(tmp, "ort")])
    trace = out.strip().splitlines()[-1]
    per = collections.defaultdict(list)
    for e in json.load(open(trace)):
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per[e["name"][:-len("_kernel_time")]].append(e["dur"])
    os.unlink(trace)
    t = {}
    for name, d in per.items():
        # a fused node named after the node it replaced: QuickGelu (SiLU)
        # "<Mul's name>/QuickGeluFusion/"
        node = re.sub(r"/\w+Fusion/?$", "", name)
        for suffix in ("_nchwc", ""):
            if name.endswith(suffix) and name[:len(name) - len(suffix)] in producer:
                node = producer[name[:len(name) - len(suffix)]]
                break
        t[node] = t.get(node, 0) + statistics.median(d[5:] or d)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--weir", default="build/weir")
    ap.add_argument("--threads", default="1")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ort", default=os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")),
        "weir-bench", "ort", "node_modules", "onnxruntime-node"))
    ap.add_argument("--per-layer", action="store_true")
    o = ap.parse_args()
    layers, producer = model_layers(o.model)
    tmp = tempfile.mkdtemp(prefix="weir-mobile-layers-")
    npy = os.path.splitext(o.model)[0] + ".input.npy"
    if not os.path.exists(npy):
        sys.exit("%s: the input (.input.npy next to the model, from realsize.sh) is missing" % npy)
    os.symlink(os.path.abspath(npy), os.path.join(tmp, "input.npy"))
    for threads in (int(t) for t in o.threads.split()):
        best = {"weir": {}, "ort": {}}
        for _ in range(o.rounds):
            for side, f in (("weir", lambda: weir_times(o, threads)),
                            ("ort", lambda: ort_times(o, threads, tmp, producer))):
                per_layer = collections.defaultdict(float)
                for node, us in f().items():
                    key = layer_key(node)
                    per_layer[key if key in layers else "(other)"] += us
                for key, us in per_layer.items():
                    if key not in best[side] or us < best[side][key]:
                        best[side][key] = us
        keys = sorted(set(best["weir"]) | set(best["ort"]),
                      key=lambda k: layers[k]["order"] if k in layers else 1e9)
        print("\n%s, %d thread(s), best of %d rounds, medians of %d runs" % (
            os.path.basename(o.model), threads, o.rounds, o.reps))
        kinds = collections.OrderedDict()
        for k in keys:
            lay = layers.get(k, {"kind": "other", "map": ""})
            w, r = best["weir"].get(k, 0.0), best["ort"].get(k, 0.0)
            kk = lay["kind"] if lay["kind"] in ("classifier", "other") or \
                lay["kind"].startswith("SE") else "%s, %s" % (
                    lay["kind"], lay["map"].split(" -> ")[1].split("x", 1)[1]
                    if lay["map"] else "")
            g = kinds.setdefault(kk, [0, 0.0, 0.0])
            g[0] += 1
            g[1] += w
            g[2] += r
            if o.per_layer:
                print("  %-58s %-22s %-28s %8.1f %8.1f" % (k[-58:], lay["kind"], lay["map"], w, r))
        print("| layer kind, output map | layers | Weir us | ORT us | Weir / ORT |")
        print("|---|---|---|---|---|")
        tw = tr = 0.0
        for kk, (n, w, r) in kinds.items():
            tw += w
            tr += r
            print("| %s | %d | %.0f | %.0f | %s |" % (kk, n, w, r, "%.2f" % (w / r) if r else "-"))
        print("| all | %d | %.0f | %.0f | %.2f |" % (len(keys), tw, tr, tw / tr))


if __name__ == "__main__":
    main()
