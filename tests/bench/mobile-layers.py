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
node producing it (its fused SiLU, QuickGelu, after the Mul it replaced).
A convolution kernel of ONNX Runtime named after an activation or Add
(Conv+Relu, Conv+Add+Relu: ResNet's "relu/Relu_output_0_nchwc") is walked
back through those element-wise nodes to the Conv it came from (of two,
the one with the kernel's input and weight shapes); its layout
conversions, ReorderInput/Output, are a row of their own.  A layer is
the node's path (torchvision's module path) up to the block it belongs
to (`conv.1`, `block.2`; the squeeze-and-excitation pooling, FCs and
gate in one), and its kind comes from its convolution: stem, expand 1x1,
depthwise KxK sN, project 1x1, SE, head 1x1, classifier; in a network
without grouped convolutions (ResNet) conv KxK sN, 1x1 s1 reduce /
expand, downsample 1x1 sN, maxpool.  Prints the per-kind table (layers,
Weir us, ORT us, ratio, difference) and with --per-layer one row per
layer, then a self-check: the share of ONNX Runtime's whole run
("model_run") its kernels cover (median over the runs; below 93% time
is spent outside the profiled kernels) and the time booked to no layer
(above 5% the mapping missed kernels).  Last, per round and side, the
whole runs beside the layers: the sum of the node (kernel) medians, the
median of the runs' sums of node times, the median whole run (Weir's
uninstrumented build, timed by `weir profile` in alternation with the
instrumented one; ORT's "model_run"), and the two sides' best whole
runs (mob19).  Not a test.
"""
import argparse
import collections
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
    producer, layers, nodes = {}, collections.OrderedDict(), {}
    convs = [n for n in m.graph.node if n.op_type == "Conv"]
    big = [n for n in convs if shapes.get(n.output[0], [0, 0, 0, 0])[2] > 1]
    # no grouped convolution: a plain network (ResNet), whose 1x1
    # convolutions are reduce / expand / downsample rather than a
    # mobile block's expand / project / head
    plain = not any(a.name == "group" and a.i > 1 for n in convs for a in n.attribute)
    for n in m.graph.node:
        nodes[n.name] = n
        for o in n.output:
            producer[o] = n.name
        key = layer_key(n.name)
        lay = layers.setdefault(key, {"kind": None, "map": "", "order": len(layers)})
        if n.op_type == "GlobalAveragePool" and "avgpool" in n.name and not plain and \
                n.name.count("/") > 2:
            lay["kind"] = "SE (pool, FCs, gate)"
        elif n.op_type in ("GlobalAveragePool", "Flatten", "ReduceMean") and not lay["kind"]:
            lay["kind"] = "global pooling, flatten"
        elif n.op_type == "MaxPool":
            lay["kind"] = "maxpool"
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
        elif plain and k == "1x1":
            lay["kind"] = "downsample 1x1 s%d" % s if s > 1 or "downsample" in n.name else \
                "1x1 s1 %s" % ("reduce" if cout <= cin else "expand")
        elif n is big[-1] and k == "1x1":
            lay["kind"] = "head 1x1"
        elif k == "1x1":
            lay["kind"] = "expand 1x1" if cout > cin else "project 1x1"
        else:
            lay["kind"] = "conv %s s%d" % (k, s)
    for lay in layers.values():
        lay["kind"] = lay["kind"] or "other"
    shapes.update(inits)
    return layers, producer, nodes, shapes


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("%s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


def weir_times(o, threads):
    """Per node label, the median time in us (`weir profile`, which times
    every node inside whole runs of an instrumented build); and for the
    self-check, the whole runs of the same invocation in us: the sum of
    the nodes' medians, the median of the runs' sums of node times, the
    median instrumented run and the median uninstrumented run."""
    out = run([o.weir, "profile", o.model, "-O2", "--threads", str(threads),
               "--reps", str(o.reps), "--format", "json"])
    p = json.loads(out)
    t = collections.defaultdict(float)
    for n in p["nodes"]:
        t[n["label"]] += n["seconds"] * 1e6
    whole = {k: p[k + "_seconds"] * 1e6 for k in
             ("node_sum", "sum_median", "instrumented_median", "run_median")}
    return t, whole


# element-wise ops ONNX Runtime folds into the convolution before them
# (Conv+Relu / Conv+Clip / Conv+Add+Relu: its NCHWc Conv with "Sum", or
# FusedConv); the fused kernel is named after the tensor the last of them
# writes, e.g. ResNet's "/layer1/layer1.0/relu/Relu_output_0_nchwc"
FUSIBLE = {"Relu", "Clip", "Add", "Sum", "Sigmoid", "Mul", "HardSigmoid",
           "HardSwish", "LeakyRelu", "Tanh", "BatchNormalization"}


LAYOUT = "(layout)"


def fused_conv(node, shapes, producer, nodes, tensors):
    """The Conv an ONNX Runtime convolution kernel named after NODE (an
    activation or residual Add) came from: walk back through fusible
    element-wise nodes to the Conv(s) feeding them and keep the one whose
    input and weight shapes are the kernel's (ResNet's downsample Add has
    two).  None when there is no such Conv."""
    todo, seen, found = [node], set(), []
    while todo:
        n = nodes.get(todo.pop())
        if n is None or n.name in seen:
            continue
        seen.add(n.name)
        if n.op_type == "Conv":
            found.append(n.name)
            continue
        if n.op_type not in FUSIBLE:
            continue
        todo.extend(producer[i] for i in n.input if i in producer)
    if len(found) > 1 and shapes:
        want = [list(d.values())[0] for d in shapes[:2]]
        found = [c for c in found
                 if [tensors.get(nodes[c].input[i]) for i in (0, 1)] == want] or found
    return found[0] if found else None


def ort_times(o, threads, tmp, producer, nodes, tensors):
    """Per ONNX node, the median kernel time in us; and for the self-check,
    the median over the timed runs of the share of the whole run
    ("model_run") its kernels cover."""
    inp = os.path.join(tmp, "input.npy")
    out = run(["node", os.path.join(os.path.dirname(__file__), "ort-profile.cjs"),
               o.ort, o.model, inp, str(threads), str(o.reps + 5),
               os.path.join(tmp, "ort")])
    trace = out.strip().splitlines()[-1]
    per = collections.defaultdict(list)
    runs, kernels = [], []
    op = {}
    for e in json.load(open(trace)):
        if e.get("cat") == "Session" and e["name"] == "model_run":
            runs.append((e["ts"], e["dur"]))
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            kernels.append((e["ts"], e["dur"]))
            name = e["name"][:-len("_kernel_time")]
            per[name].append(e["dur"])
            args = e.get("args", {})
            op[name] = (args.get("op_name", ""), args.get("input_type_shape", []))
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
        kind, shapes = op[name]
        if kind in ("ReorderInput", "ReorderOutput"):
            node = LAYOUT
        if kind in ("Conv", "FusedConv") and node in nodes and nodes[node].op_type != "Conv":
            node = fused_conv(node, shapes, producer, nodes, tensors) or node
        t[node] = t.get(node, 0) + statistics.median(d[5:] or d)
    timed = sorted(runs)[5:] or runs
    cover = [sum(d for ts, d in kernels if t0 <= ts < t0 + dur) / dur
             for t0, dur in timed]
    whole = {"cover": statistics.median(cover) if cover else None,
             "node_sum": sum(t.values()),
             "sum_median": statistics.median(
                 sum(d for ts, d in kernels if t0 <= ts < t0 + dur)
                 for t0, dur in timed) if timed else 0.0,
             "run_median": statistics.median(d for t0, d in timed) if timed else 0.0}
    return t, whole


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
    layers, producer, nodes, tensors = model_layers(o.model)
    tmp = tempfile.mkdtemp(prefix="weir-mobile-layers-")
    npy = os.path.splitext(o.model)[0] + ".input.npy"
    if not os.path.exists(npy):
        sys.exit("%s: the input (.input.npy next to the model, from realsize.sh) is missing" % npy)
    os.symlink(os.path.abspath(npy), os.path.join(tmp, "input.npy"))
    for threads in (int(t) for t in o.threads.split()):
        best = {"weir": {}, "ort": {}}
        cover = []
        wholes = {"weir": [], "ort": []}
        for _ in range(o.rounds):
            for side, f in (("weir", lambda: weir_times(o, threads)),
                            ("ort", lambda: ort_times(o, threads, tmp, producer, nodes, tensors))):
                per_layer = collections.defaultdict(float)
                times, whole = f()
                wholes[side].append(whole)
                if whole.get("cover"):
                    cover.append(whole["cover"])
                for node, us in times.items():
                    key = layer_key(node)
                    per_layer[key if key in layers or key == LAYOUT else "(other)"] += us
                for key, us in per_layer.items():
                    if key not in best[side] or us < best[side][key]:
                        best[side][key] = us
        keys = sorted(set(best["weir"]) | set(best["ort"]),
                      key=lambda k: layers[k]["order"] if k in layers else 1e9)
        print("\n%s, %d thread(s), best of %d rounds, medians of %d runs" % (
            os.path.basename(o.model), threads, o.rounds, o.reps))
        kinds = collections.OrderedDict()
        for k in keys:
            lay = layers.get(k, {"kind": "layout conversions (ORT)" if k == LAYOUT else "other",
                                 "map": ""})
            w, r = best["weir"].get(k, 0.0), best["ort"].get(k, 0.0)
            kk = lay["kind"] if lay["kind"] in ("classifier", "other") or \
                lay["kind"].startswith("SE") or not lay["map"] else "%s, %s" % (
                    lay["kind"], lay["map"].split(" -> ")[1].split("x", 1)[1])
            g = kinds.setdefault(kk, [0, 0.0, 0.0])
            g[0] += 1
            g[1] += w
            g[2] += r
            if o.per_layer:
                print("  %-58s %-22s %-28s %8.1f %8.1f" % (k[-58:], lay["kind"], lay["map"], w, r))
        print("| layer kind, output map | layers | Weir us | ORT us | Weir / ORT | Weir - ORT us |")
        print("|---|---|---|---|---|---|")
        tw = tr = 0.0
        for kk, (n, w, r) in kinds.items():
            tw += w
            tr += r
            print("| %s | %d | %.0f | %.0f | %s | %+.0f |" % (
                kk, n, w, r, "%.2f" % (w / r) if r else "-", w - r))
        print("| all | %d | %.0f | %.0f | %.2f | %+.0f |" % (len(keys), tw, tr, tw / tr, tw - tr))
        # self-check: ONNX Runtime's kernels cover its whole run (nothing
        # runs outside the profiled kernels), and they are booked to the
        # model's layers (nothing left in "other" but layout conversions)
        other = sum(r for kk, (n, w, r) in kinds.items() if kk == "other")
        if cover:
            c = statistics.median(cover)
            print("ORT self-check: the kernels cover %.1f%% of the whole run (median of runs), "
                  "%.0f of %.0f us (%.1f%%) are in no layer (\"other\")%s" % (
                      100 * c, other, tr, 100 * other / tr,
                      "" if 0.93 <= c <= 1.01 and other <= 0.05 * tr
                      else "  ** more than 5-7% unaccounted **"))
        # whole runs against the layers' sum, per round: the sum of the
        # per-node (per-kernel) medians, the median over the runs of each
        # run's sum of node times, and the median whole run (Weir: the
        # uninstrumented build's, timed in alternation with the
        # instrumented one; ORT: "model_run" of the profiled session).
        # The best-of-rounds table above sums per-node medians, which
        # leave out what a run spends around its slowest nodes.
        for side, name in (("weir", "Weir"), ("ort", "ORT")):
            print("%s whole runs, us per round: %s" % (name, "; ".join(
                "node medians %.0f, median of runs' node sums %.0f, run %.0f%s (sum / run %.3f)" % (
                    w["node_sum"], w["sum_median"], w["run_median"],
                    ", instrumented %.0f" % w["instrumented_median"]
                    if "instrumented_median" in w else "",
                    w["node_sum"] / w["run_median"] if w["run_median"] else 0)
                for w in wholes[side])))
        rw = [w["run_median"] for w in wholes["weir"]]
        ro = [w["run_median"] for w in wholes["ort"]]
        if rw and ro and min(ro) > 0:
            print("whole runs, best round: Weir %.0f, ORT %.0f us (Weir / ORT %.3f; "
                  "ORT's with its profiler on)" % (min(rw), min(ro), min(rw) / min(ro)))

if __name__ == "__main__":
    main()
