#!/usr/bin/python3
"""peer-torch.py — PyTorch CPU inference time of one sample model, for
tests/bench/bench-models.c.

    peer-torch.py [--threads N] [--reps N] [--warmup N] MODEL INPUT.npy EXPECTED.npy

MODEL is a name from samples/models/generate.py (lenet64: the LeNet
definition); the model is built there with the same seed, so it holds the
same weights as the ONNX file.  It runs under torch.inference_mode() with
torch.set_num_threads(N) and PyTorch's default CPU back end.  The last line
printed is

    ok MEDIAN_MS MAX_ABS_ERR PASS|FAIL min_ms=MIN_MS

(the output compared with EXPECTED at rtol 1e-4, atol 1e-5), or
"skip REASON" when torch is not available.
"""

import argparse
import importlib.util
import os
import statistics
import sys
import time

RTOL, ATOL = 1e-4, 1e-5


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("model")
    p.add_argument("input")
    p.add_argument("expected")
    a = p.parse_args()
    try:
        import numpy as np
        import torch
    except ImportError as e:
        print(f"skip {e} (Debian's python3-torch and python3-numpy are needed)")
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    gen_path = os.path.join(here, "..", "..", "samples", "models", "generate.py")
    spec = importlib.util.spec_from_file_location("weir_generate", gen_path)
    gen = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(gen)
    except ImportError as e:
        print(f"skip samples/models/generate.py needs {e}")
        return 0
    entry = [m for m in gen.MODELS if m[0] == a.model]
    if not entry:
        print(f"fail unknown model {a.model}")
        return 1
    _, make, seed, _, _ = entry[0]
    torch.set_num_threads(a.threads)
    torch.manual_seed(seed)
    model = make()
    model.eval()
    x = torch.from_numpy(np.load(a.input))
    want = np.load(a.expected)
    with torch.inference_mode():
        for _ in range(max(a.warmup, 1)):
            y = model(x)
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            y = model(x)
            times.append(time.perf_counter() - t0)
    got = y.numpy().reshape(want.shape)
    err = float(np.max(np.abs(got - want)))
    ok = bool(np.all(np.abs(got - want) <= ATOL + RTOL * np.abs(want)))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(f"ok {statistics.median(times) * 1e3:.6f} {err:.3g} {'PASS' if ok else 'FAIL'} min_ms={min(times) * 1e3:.6f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
