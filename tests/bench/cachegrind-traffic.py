#!/usr/bin/python3
"""cachegrind-traffic.py - Weir's modeled memory traffic against a cache
simulator (issue 15, docs/analysis.md "Validation against cachegrind").

For each small kernel (generated, or a sample program scaled up) this script
  1. writes the program (Weir JSON; the tiled matmul through `weir apply
     map-tiling`),
  2. asks `weir info --count compiled` for its modeled traffic with the
     simulated last-level cache ($WEIR_HW_CACHES pins the cache sizes),
  3. exports it (`weir export -O0`: the program as written), builds the
     harness without OpenMP and runs it once (--reps 0 --warmup 0: the
     check run only) under `valgrind --tool=cachegrind --cache-sim=yes` with
     the same LL size,
  4. sums the LL read and write misses (DLmr + DLmw) of the lines of the
     generated kernel's source file only (built with -g; not the harness's
     loading and checking), times the line size,
and prints both figures and their ratio.

Usage: tests/bench/cachegrind-traffic.py [BUILD_DIR] [--ll BYTES]
  BUILD_DIR  meson build directory with the weir binary (default: build)
  --ll       simulated last-level cache (default 262144 = 256 KiB, 8-way,
             64-byte lines); the data of every kernel is several times it.
Needs valgrind, make and cc.  Prints a Markdown table.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

LINE = 64


def weir(build, *args, env=None):
    r = subprocess.run([os.path.join(build, "weir"), *args],
                       capture_output=True, text=True, env=env)
    if r.returncode != 0:
        sys.exit("weir %s failed:\n%s%s" % (" ".join(args), r.stdout,
                                             r.stderr))
    return r.stdout


def matmul(m, n, k):
    """C = A B as in samples/matmul.json: a zeroing map, then a map over
    (i, j, k) whose tasklet adds a*b into C[i, j] (WCR sum)."""
    src = os.path.join(os.environ.get("WEIR_SRCDIR", "."), "samples",
                       "matmul.json")
    g = json.load(open(src))
    g["name"] = "mm"
    size = {"64": str(m), "48": str(n), "32": str(k)}
    for c in g["containers"]:
        c["shape"] = [size[d] for d in c["shape"]]
    for s in g["states"]:
        for nd in s["nodes"]:
            if "ranges" in nd:
                nd["ranges"] = ["0:" + size[r.split(":")[1]]
                                for r in nd["ranges"]]
        for e in s["edges"]:
            if "subset" in e:
                e["subset"] = re.sub(r"0:(\d+)",
                                     lambda x: "0:" + size[x.group(1)],
                                     e["subset"])
            e.pop("volume", None)
    return g


def scaled_sample(name, sizes):
    """samples/NAME.json with the constant sizes of its shapes, map ranges
    and memlet subsets replaced (sizes: "32" -> "1000", ...)."""
    src = os.path.join(os.environ.get("WEIR_SRCDIR", "."), "samples",
                       name + ".json")
    g = json.load(open(src))

    def sub(text):
        return re.sub(r"\b(\d+)\b",
                      lambda x: sizes.get(x.group(1), x.group(1)), text)

    for c in g["containers"]:
        c["shape"] = [sizes.get(d, d) for d in c["shape"]]
    for st in g["states"]:
        for nd in st["nodes"]:
            if "ranges" in nd:
                nd["ranges"] = [sub(r) for r in nd["ranges"]]
        for e in st["edges"]:
            if "subset" in e:
                e["subset"] = sub(e["subset"])
            e.pop("volume", None)
    return g


def elementwise(name, n, code, ins):
    """out[i] = code(ins...) over i in 0:n."""
    cont = [{"id": i + 1, "name": x, "dtype": "f32", "shape": [str(n)]}
            for i, x in enumerate(ins + ["Y"])]
    nid = len(cont) + 2
    nodes, edges = [], []

    def node(d):
        nonlocal nid
        d["id"] = nid
        nid += 1
        nodes.append(d)
        return d["id"]

    acc = [node({"kind": "access", "label": x, "data": x}) for x in ins]
    entry = node({"kind": "map_entry", "label": name,
                  "in": ["IN_" + x for x in ins],
                  "out": ["OUT_" + x for x in ins], "params": ["i"],
                  "ranges": ["0:%d" % n], "schedule": "parallel"})
    t = node({"kind": "tasklet", "label": "f",
              "in": [x.lower() for x in ins], "out": ["y"], "code": code})
    ex = node({"kind": "map_exit", "label": name, "entry": entry,
               "in": ["IN_Y"], "out": ["OUT_Y"]})
    y = node({"kind": "access", "label": "Y", "data": "Y"})

    def edge(**kw):
        nonlocal nid
        kw["id"] = nid
        nid += 1
        edges.append(kw)

    for a, x in zip(acc, ins):
        edge(src=a, dst=entry, dst_conn="IN_" + x, data=x,
             subset="0:%d" % n)
        edge(src=entry, src_conn="OUT_" + x, dst=t, dst_conn=x.lower(),
             data=x, subset="i")
    edge(src=t, src_conn="y", dst=ex, dst_conn="IN_Y", data="Y", subset="i")
    edge(src=ex, src_conn="OUT_Y", dst=y, data="Y", subset="0:%d" % n)
    state = {"id": len(cont) + 1, "label": "main", "nodes": nodes,
             "edges": edges}
    return {"format": "weir-ir", "version": 1, "name": name, "symbols": [],
            "containers": cont, "start": state["id"], "states": [state],
            "transitions": []}


def modeled_traffic(build, prog, env, defines):
    out = weir(build, "info", prog, "--count", "compiled", *defines,
               env=env)
    for line in out.splitlines():
        f = line.split()
        if f and f[0] == "total":
            return parse_size(f[1], f[2])
    sys.exit("no total line in weir info:\n" + out)


def parse_size(v, unit):
    f = float(v)
    return int(f * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20,
                    "GiB": 1 << 30}[unit])


def simulate(build, prog, ll, work, env, defines):
    d = os.path.join(work, "export")
    shutil.rmtree(d, ignore_errors=True)
    weir(build, "export", prog, "-O0", "-o", d, *defines, env=env)
    # no OpenMP: one thread, so every access is simulated in order
    subprocess.run(["make", "-s", "-C", d, "CFLAGS=-O2 -g"], check=True,
                   capture_output=True)
    kernel = [f for f in os.listdir(d)
              if f.endswith(".c") and f != "main.c"][0]
    out = os.path.join(work, "cg.out")
    r = subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=yes",
         "--LL=%d,8,%d" % (ll, LINE), "--cachegrind-out-file=" + out,
         "./harness", "--reps", "0", "--warmup", "0",
         "--weights", kernel[:-2] + ".weights"],
        cwd=d, capture_output=True, text=True)
    if r.returncode != 0 or "result: PASS" not in r.stdout:
        sys.exit("harness under cachegrind failed:\n%s%s" % (r.stdout,
                                                            r.stderr))
    events, misses, in_kernel = None, 0, False
    for line in open(out):
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("fl="):
            in_kernel = os.path.basename(line[3:].strip()) == kernel
        elif in_kernel and line[:1].isdigit():
            v = line.split()[1:]
            row = dict(zip(events, [int(x) for x in v]))
            misses += row.get("DLmr", 0) + row.get("DLmw", 0)
    return misses * LINE


def main():
    args = sys.argv[1:]
    ll = 256 << 10
    if "--ll" in args:
        i = args.index("--ll")
        ll = int(args[i + 1])
        del args[i:i + 2]
    build = os.path.abspath(args[0] if args else "build")
    env = dict(os.environ)
    # the model's cache is the simulated LL: L1 and L2 pinned below it
    env["WEIR_HW_CACHES"] = "%d,%d,%d" % (min(32 << 10, ll // 4),
                                          min(128 << 10, ll // 2), ll)
    env.setdefault("WEIR_SRCDIR", os.getcwd())
    work = tempfile.mkdtemp(prefix="weir-cachegrind-")
    kernels = []
    n = 1 << 20
    kernels.append(("scale, 1M floats",
                    elementwise("scale", n, "y = 2.0 * a", ["A"])))
    # (M, N, K): fits the cache; B (K x N) does not, rows of 2000 bytes;
    # the same with rows of 2048 bytes (a power of two: conflict misses)
    for m, nn, k in [(128, 128, 128), (240, 500, 260), (256, 512, 256)]:
        kernels.append(("matmul %dx%dx%d (i, j, k)" % (m, nn, k),
                        matmul(m, nn, k)))
    # the softmax sample (max, exp and sum, divide: three maps over rows)
    # on 1000 x 500 floats
    kernels.append(("samples/softmax.json, 1000 x 500",
                    scaled_sample("softmax", {"32": "1000", "64": "500"})))
    rows = []
    src = os.environ.get("WEIR_SRCDIR", os.getcwd())
    rows.append(("samples/vector_add.json, N = 1M",
                 os.path.join(src, "samples", "vector_add.json"),
                 ["-D", "N=%d" % n]))
    for i, (label, g) in enumerate(kernels):
        prog = os.path.join(work, "%d-%s.json" % (i, g["name"]))
        json.dump(g, open(prog, "w"))
        rows.append((label, prog, []))
    # the tiled matmul: map-tiling of the (i, j, k) map, 32x32x32 tiles
    # (a tile's footprint, 3 x 4 KiB, fits the simulated cache; the last
    # tiles are clipped)
    mm = matmul(240, 500, 260)
    src = os.path.join(work, "mm-src.json")
    json.dump(mm, open(src, "w"))
    tiled = os.path.join(work, "mm-tiled.json")
    weir(build, "apply", src, "map-tiling", "--site", "15", "--param",
         "tile=32,32,32", "-o", tiled, env=env)
    rows.append(("matmul 240x500x260, tiled 32x32x32", tiled, []))
    print("LL %d KiB, 8-way, %d-byte lines (valgrind --tool=cachegrind "
          "--cache-sim=yes --LL=%d,8,%d); one kernel run, one thread\n"
          % (ll >> 10, LINE, ll, LINE))
    print("| kernel | modeled traffic | cachegrind LL misses x 64 B | "
          "modeled / simulated |")
    print("|---|---|---|---|")
    for label, prog, defines in rows:
        model = modeled_traffic(build, prog, env, defines)
        sim = simulate(build, prog, ll, work, env, defines)
        ratio = model / sim if sim else float("inf")
        print("| %s | %.2f MiB | %.2f MiB | %.2f |" % (
            label, model / 2**20, sim / 2**20, ratio))
        sys.stdout.flush()
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
