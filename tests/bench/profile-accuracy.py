#!/usr/bin/python3
"""profile-accuracy.py: issue 15's profiler criterion on real-size CNNs.

"`weir profile` of a real-size CNN lists every node with time and roofline
fraction; the sum of node times is within 10% of the uninstrumented run
time."  For each model and thread count, ROUNDS times in alternation:

  weir profile MODEL --threads N --reps R --warmup W --format json
      the instrumented kernel and the plain one, run by run in alternation
      in one process: the sum of the node medians, the median over runs of
      the sum of the nodes (one instrumented run's time inside its nodes),
      the instrumented run and the plain run (medians);
  weir bench MODEL --threads N --reps R --warmup W
      the uninstrumented kernel on its own (median).

It prints one row per model and thread count (the medians over the rounds)
in Markdown: the per-run node sum against the plain run of the same
process (the criterion; "ok" when within 10%) and against `weir bench`, the
instrumented run against the plain one (the instrumentation's overhead),
the load average (`uptime`) before the first and after the last round, and
how many nodes have a time and a roofline fraction.

  tests/bench/profile-accuracy.py [BUILD_DIR] [--models "resnet18 resnet50
      mobilenet_v2"] [--threads "1 2"] [--reps 10] [--warmup 2] [--rounds 2]
      [--cache-dir DIR] [--weir-flags "..."]

The models are those of tests/bench/realsize.sh (exported once by
tests/bench/realsize-models.py into ~/.cache/weir-bench/realsize, which
needs /usr/bin/python3 with torch; existing files are reused).  Timings:
run it on a quiet machine (docs/analysis.md).  Exit status 0 whatever the
figures (a benchmark, not a test); 1 when a run fails.
"""
import json
import os
import re
import shlex
import statistics
import subprocess
import sys

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def seconds(value, unit):
    return float(value) * {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}[unit]


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        sys.stderr.write("profile-accuracy: %s failed (%d):\n%s%s" %
                         (" ".join(cmd), p.returncode, p.stdout[-2000:],
                          p.stderr[-2000:]))
        sys.exit(1)
    return p.stdout


def profile(weir, model, n, a):
    out = run([weir, "profile", model, "--threads", str(n), "--reps",
               str(a["reps"]), "--warmup", str(a["warmup"]), "--format",
               "json"] + a["flags"])
    j = json.loads(out)
    nodes = j["nodes"]
    return {
        "node_sum": j["node_sum_seconds"],
        "sum_median": j["sum_median_seconds"],
        "instrumented": j["instrumented_median_seconds"],
        "plain": j["run_median_seconds"],
        "nodes": len(nodes),
        "timed": sum(1 for x in nodes if x["seconds"] > 0),
        "roofline": sum(1 for x in nodes if x["bound"] is not None),
    }


def bench(weir, model, n, a):
    out = run([weir, "bench", model, "--threads", str(n), "--reps",
               str(a["reps"]), "--warmup", str(a["warmup"])] + a["flags"])
    m = re.search(r"^time\s+median ([0-9.]+) (s|ms|us|ns),", out, re.M)
    if not m:
        sys.stderr.write("profile-accuracy: no median in:\n" + out)
        sys.exit(1)
    return seconds(m.group(1), m.group(2))


def main(argv):
    a = {"build": os.path.join(SRC, "build"), "models": "resnet18 resnet50 "
         "mobilenet_v2", "threads": "1 2", "reps": 10, "warmup": 2,
         "rounds": 2, "cache": os.path.join(
             os.environ.get("XDG_CACHE_HOME",
                            os.path.expanduser("~/.cache")),
             "weir-bench", "realsize"), "flags": []}
    i = 1
    if i < len(argv) and not argv[i].startswith("--"):
        a["build"] = argv[i]
        i += 1
    opts = {"--models": "models", "--threads": "threads", "--reps": "reps",
            "--warmup": "warmup", "--rounds": "rounds",
            "--cache-dir": "cache", "--weir-flags": "flags"}
    while i < len(argv):
        if argv[i] not in opts or i + 1 == len(argv):
            sys.stderr.write(__doc__)
            return 2
        key = opts[argv[i]]
        v = argv[i + 1]
        a[key] = (int(v) if key in ("reps", "warmup", "rounds") else
                  shlex.split(v) if key == "flags" else v)
        i += 2
    weir = os.path.join(os.path.abspath(a["build"]), "weir")
    if not os.access(weir, os.X_OK):
        sys.stderr.write("profile-accuracy: %s is not built\n" % weir)
        return 1
    models = a["models"].split()
    missing = [m for m in models
               if not os.path.exists(os.path.join(a["cache"], m + ".onnx"))]
    if missing:
        run(["/usr/bin/python3",
             os.path.join(SRC, "tests", "bench", "realsize-models.py"),
             "export", a["cache"]] + missing)
    up = subprocess.run(["uptime"], stdout=subprocess.PIPE,
                        text=True).stdout.strip()
    print("profile-accuracy.py: %d processors, %d reps, %d warm-up, %d "
          "rounds; uptime: %s" % (os.cpu_count(), a["reps"], a["warmup"],
                                  a["rounds"], up), flush=True)
    rows = []
    for m in models:
        model = os.path.join(a["cache"], m + ".onnx")
        for n in [int(t) for t in a["threads"].split()]:
            # compiles both kernels into the compile cache, untimed
            profile(weir, model, n, dict(a, reps=1, warmup=0))
            l0 = load()
            ps, bs = [], []
            for _ in range(a["rounds"]):
                ps.append(profile(weir, model, n, a))
                bs.append(bench(weir, model, n, a))
            l1 = load()
            med = {k: statistics.median(p[k] for p in ps) for k in ps[0]}
            b = statistics.median(bs)
            row = (m, n, l0, l1, med, b)
            rows.append(row)
            print("%s, %d threads (load %.1f -> %.1f): per-run node sum %.2f "
                  "ms, plain %.2f ms, bench %.2f ms, instrumented %.2f ms; "
                  "rounds: %s" %
                  (m, n, l0, l1, med["sum_median"] * 1e3, med["plain"] * 1e3,
                   b * 1e3, med["instrumented"] * 1e3,
                   ", ".join("%.1f/%.1f/%.1f" % (p["sum_median"] * 1e3,
                                                 p["plain"] * 1e3, x * 1e3)
                             for p, x in zip(ps, bs))), flush=True)
    print()
    print("| model | threads | load | nodes (timed, with roofline) | "
          "sum of node medians | per-run node sum | plain run | weir bench | "
          "instrumented run | per-run sum / plain | per-run sum / bench | "
          "instrumented / plain | within 10% |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for m, n, l0, l1, med, b in rows:
        r_plain = med["sum_median"] / med["plain"]
        r_bench = med["sum_median"] / b
        over = med["instrumented"] / med["plain"]
        print("| %s | %d | %.1f-%.1f | %d (%d, %d) | %.2f ms | %.2f ms | "
              "%.2f ms | %.2f ms | %.2f ms | %.1f%% | %.1f%% | %.1f%% | %s |" %
              (m, n, l0, l1, med["nodes"], med["timed"], med["roofline"],
               med["node_sum"] * 1e3, med["sum_median"] * 1e3,
               med["plain"] * 1e3, b * 1e3, med["instrumented"] * 1e3,
               100 * r_plain, 100 * r_bench, 100 * over,
               "ok" if abs(r_plain - 1) <= 0.10 else "NO"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
