#!/usr/bin/env python3
"""Runs a sample of samples/python in a temporary directory and checks what
it wrote (python/meson.build registers one test per sample)."""

import csv
import os
import subprocess
import sys
import tempfile

try:
    import gi

    gi.require_version("Weir", "0.1")
    import numpy  # noqa: F401
except (ImportError, ValueError) as e:
    print("skipped: %s" % e)
    sys.exit(77)


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def main():
    sample = sys.argv[1]
    name = os.path.splitext(os.path.basename(sample))[0]
    if name == "compare_recipes":
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("skipped: matplotlib (python3-matplotlib) is missing")
            return 77
    with tempfile.TemporaryDirectory() as d:
        extra = ["--repetitions", "5"] if name == "compare_recipes" else ["--epochs", "3"]
        cmd = [sys.executable, sample, "--output-dir", d] + extra
        print(" ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
        if name == "compare_recipes":
            r = rows(os.path.join(d, "recipes.csv"))
            assert [x["recipe"] for x in r] == ["-O0", "-O2", "lenet.json"], r
            for x in r:
                assert float(x["median_ms"]) > 0, x
                assert float(x["max_abs_error"]) < 1e-4, x
                assert int(x["traffic_bytes"]) > 0, x
                assert int(x["logical_bytes"]) > 0, x
            with open(os.path.join(d, "recipes.png"), "rb") as f:
                assert f.read(8) == b"\x89PNG\r\n\x1a\n"
        else:
            r = rows(os.path.join(d, "epochs.csv"))
            assert len(r) == 3, r
            assert float(r[-1]["val_accuracy"]) > 0.85, r
            assert os.path.getsize(os.path.join(d, "digits_mlp.trained.onnx")) > 1000
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
