#!/usr/bin/env python3
"""conv-layers.py — per-layer GFLOP/s of a model's convolutions on Weir's
GEMM, by orientation of the GEMM (docs/native.md, "channels in the
vectors"; docs/performance.md).

    tests/bench/conv-layers.py MODEL [--weir build/weir] [--threads "1 2"]
                               [--reps 20] [--rounds 2] [--per-layer]
                               [--variants "shape 1 2"]

The model is optimized once (`weir optimize MODEL -O2 -o prog.json`); each
variant is that program compiled with WEIR_GEMM_ORIENT=1 (every
convolution on Weir's GEMM with the vectors along the output pixels), =2
(along the output channels) or unset (`shape`: the shape rule, what
`weir run` does).  Per variant `weir codegen` gives each convolution's sizes and
orientation (the call and its comment), and `weir profile -O0 --format
csv` each node's median time; the variants run alternately, `--rounds`
times, and the best round of each node is kept (on a shared machine the
best is the closer estimate of the idle time).  Prints, per output map
size and kernel size, the summed FLOPs over the summed time of the
convolutions on Weir's GEMM (GFLOP/s) for each variant, and with --per-layer one row per
convolution.  Not a test: it asserts nothing.
"""
import argparse
import csv
import io
import os
import re
import subprocess
import sys
import tempfile


def run(cmd, orient=None):
    env = dict(os.environ)
    env.pop("WEIR_GEMM_ORIENT", None)
    if orient and orient != "shape":
        env["WEIR_GEMM_ORIENT"] = orient
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True, env=env)
    if r.returncode != 0:
        sys.exit("%s failed:\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return r.stdout


def split_args(text):
    """Top-level comma-separated arguments of a C call."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    out.append(cur.strip())
    return out


CALL = re.compile(r"/\* Conv '[^']*' \(node (\d+)\): ([^*]*)\*/\s*"
                  r"[^;]*?weir_wconv2d(t?)_\w+\((.*?)\);", re.S)


def conv_calls(c_source):
    """node id -> dict of the convolution's sizes and orientation."""
    convs = {}
    for m in CALL.finditer(c_source):
        a = split_args(m.group(4))
        # x, w, wpk, wps, b, y, r, n, c, h, w, m, kh, kw, oh, ow, group, ...
        try:
            n, c, h, w, mm, kh, kw, oh, ow, g = (int(v) for v in a[7:17])
        except ValueError:
            continue  # symbolic sizes
        convs[int(m.group(1))] = dict(
            n=n, c=c, m=mm, kh=kh, kw=kw, oh=oh, ow=ow, group=g,
            channels=bool(m.group(3)), what=m.group(2).strip())
    return convs


def profile(weir, path, threads, reps, orient):
    out = run([weir, "profile", path, "-O0", "--threads", str(threads),
               "--reps", str(reps), "--format", "csv"], orient)
    times = {}
    for row in csv.DictReader(io.StringIO(out)):
        try:
            times[int(row["node"])] = float(row["seconds"])
        except (KeyError, ValueError):
            pass
    return times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--weir", default="build/weir")
    ap.add_argument("--threads", default="1 2")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", default="1 shape")
    ap.add_argument("--per-layer", action="store_true")
    o = ap.parse_args()
    variants = o.variants.split()
    tmp = tempfile.mkdtemp(prefix="weir-conv-layers-")
    base = os.path.join(tmp, "prog.json")
    run([o.weir, "optimize", o.model, "-O2", "-o", base])
    convs = {}
    for v in variants:
        d = os.path.join(tmp, "c-" + v)
        run([o.weir, "codegen", base, "-o", d], v)
        src = "".join(open(os.path.join(d, x)).read()
                      for x in sorted(os.listdir(d)) if x.endswith(".c"))
        convs[v] = conv_calls(src)
    ref = convs[variants[0]]
    for threads in (int(t) for t in o.threads.split()):
        best = {v: {} for v in variants}
        for _ in range(o.rounds):
            for v in variants:
                t = profile(o.weir, base, threads, o.reps, v)
                for node, s in t.items():
                    if node not in best[v] or s < best[v][node]:
                        best[v][node] = s
        print("\n%s, %d thread(s), best of %d rounds of weir profile --reps "
              "%d" % (os.path.basename(o.model), threads, o.rounds, o.reps))
        groups = {}
        for node, cv in sorted(ref.items()):
            if cv["group"] != 1:
                continue
            flops = (2.0 * cv["n"] * cv["m"] * cv["c"] * cv["kh"] * cv["kw"] *
                     cv["oh"] * cv["ow"])
            key = "%dx%d %dx%d" % (cv["oh"], cv["ow"], cv["kh"], cv["kw"])
            gr = groups.setdefault(key, {"layers": 0, "flops": 0.0,
                                         "t": {v: 0.0 for v in variants}})
            gr["layers"] += 1
            gr["flops"] += flops
            row = []
            for v in variants:
                s = best[v].get(node)
                gr["t"][v] += s if s else float("nan")
                ch = convs[v].get(node, {}).get("channels")
                row.append("%8.1f %s" % (flops / s / 1e9 if s else 0,
                                         "C" if ch else "P"))
            if o.per_layer:
                print("  node %4d %4d -> %4d %-6s %s" % (
                    node, cv["c"], cv["m"], key, "  ".join(row)))
        print("| map, kernel | layers | GFLOP | " +
              " | ".join("GFLOP/s orient=%s" % v for v in variants) + " |")
        print("|---|---|---|" + "---|" * len(variants))
        for key in sorted(groups, key=lambda k: (-int(k.split("x")[0]), k)):
            gr = groups[key]
            print("| %s | %d | %.3f | %s |" % (
                key, gr["layers"], gr["flops"] / 1e9,
                " | ".join("%.1f" % (gr["flops"] / gr["t"][v] / 1e9)
                           for v in variants)))


if __name__ == "__main__":
    main()
