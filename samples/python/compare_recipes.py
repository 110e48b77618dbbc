#!/usr/bin/env python3
"""Compare three optimization recipes on a model from Python.

For each recipe the script optimizes the model, compiles it (through the
compile cache), checks its output against the reference output, times it
and reads the analyses; it writes one CSV row per recipe and a plot of
time and data movement (matplotlib, PNG).

  python3 samples/python/compare_recipes.py --output-dir out
  (from the build tree: GI_TYPELIB_PATH=build LD_LIBRARY_PATH=build
   PYTHONPATH=python, docs/python.md)

Defaults: samples/models/lenet.onnx with its reference input and output,
recipes -O0 (the program as imported), -O2 (the default pipeline) and
samples/recipes/lenet.json (hand-written).
"""

import argparse
import csv
import os
import sys

import numpy as np

try:
    import weir
except ImportError:  # from the source tree: <source>/python/weir.py
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import weir

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES = os.path.dirname(HERE)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=os.path.join(SAMPLES, "models", "lenet.onnx"))
    p.add_argument("--input", help=".npy or .pb input (default: <model>/input_0.npy)")
    p.add_argument("--expected", help=".npy or .pb output (default: <model>/output_0.npy)")
    p.add_argument("--recipe", action="append", dest="recipes",
                   help="-O<level> or a recipe file; give it three times "
                        "(default: -O0, -O2, samples/recipes/lenet.json)")
    p.add_argument("--repetitions", type=int, default=20)
    p.add_argument("--output-dir", default=".")
    return p.parse_args()


def optimized(program, recipe):
    """A copy of program optimized by recipe: "-O<level>" or a recipe file."""
    if recipe.startswith("-O"):
        return weir.optimize(program, int(recipe[2:]))
    return weir.apply_recipe(program, recipe)


def main():
    args = parse_args()
    base = os.path.splitext(args.model)[0]
    x = weir.load_tensor(args.input or os.path.join(base, "input_0.npy"))
    want = weir.load_tensor(args.expected or os.path.join(base, "output_0.npy"))
    recipes = args.recipes or ["-O0", "-O2", os.path.join(SAMPLES, "recipes", "lenet.json")]
    os.makedirs(args.output_dir, exist_ok=True)

    program = weir.load(args.model)
    inputs = [n for n in program.argument_names() if n != "output"]
    rows = []
    for recipe in recipes:
        g = optimized(program, recipe)
        kernel = weir.compile(g)
        got = kernel.run({inputs[0]: x})["output"]
        error = float(np.max(np.abs(got - want)))
        t = kernel.bench({inputs[0]: x}, warmup=3, repetitions=args.repetitions)
        a = weir.analyses(g)
        rows.append({
            "recipe": os.path.basename(recipe),
            "median_ms": t["median"] * 1e3,
            "min_ms": t["min"] * 1e3,
            "traffic_bytes": a["total_traffic"],
            "logical_bytes": a["total_bytes"],
            "flops": a["total_flops"],
            "peak_transient_bytes": a["peak_transient_bytes"],
            "nodes": len(a["nodes"]),
            "max_abs_error": error,
        })
        print("%-12s %8.3f ms  %10d B traffic (modeled)  %10d B logical  "
              "%10d FLOPs  max error %.2e"
              % (rows[-1]["recipe"], rows[-1]["median_ms"], a["total_traffic"],
                 a["total_bytes"], a["total_flops"], error))

    csv_path = os.path.join(args.output_dir, "recipes.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [r["recipe"] for r in rows]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    ax1.bar(names, [r["median_ms"] for r in rows], color="#4477aa")
    ax1.set_ylabel("median time per run (ms)")
    ax1.set_title("time (%d runs)" % args.repetitions)
    big = max(r["traffic_bytes"] for r in rows) >= 2**20
    unit, scale = ("MiB", 2**20) if big else ("KiB", 2**10)
    ax2.bar(names, [r["traffic_bytes"] / scale for r in rows], color="#cc6677")
    ax2.set_ylabel("modeled memory traffic (%s)" % unit)
    ax2.set_title("data movement (modeled traffic)")
    for ax in (ax1, ax2):
        ax.tick_params(axis="x", labelrotation=15)
    fig.suptitle(os.path.basename(args.model))
    fig.tight_layout()
    png_path = os.path.join(args.output_dir, "recipes.png")
    fig.savefig(png_path, dpi=100)
    print("wrote %s and %s" % (csv_path, png_path))
    return 0


if __name__ == "__main__":
    sys.exit(main())
