#!/usr/bin/python3
"""train-step-torch.py [--threads T] [--reps N] [--warmup N] [--batch B] NAME...

PyTorch's time for one training step of the sample models (the classes of
samples/models/generate.py, with their weights), on the CPU with T threads:
zero_grad, forward, loss (cross-entropy on a [batch, classes] output, else
mean squared error), backward, SGD step with lr 0.01 -- the step Weir's
training program performs (tests/bench/bench-train.c).  The batch is the
model's reference batch (samples/models/NAME/train/input.npy); models with
a symbolic batch get B samples (default 32), the reference input repeated.
Prints the median milliseconds per step for each model.  Needs Debian's
python3-torch (run with /usr/bin/python3).
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS_DIR = os.path.join(HERE, "..", "..", "samples", "models")
sys.path.insert(0, MODELS_DIR)
import generate  # noqa: E402  (the sample model definitions)


def resize(a, b):
    if b == 0 or a.shape[0] == b:
        return a
    reps = -(-b // a.shape[0])
    return np.concatenate([a] * reps)[:b]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("names", nargs="+")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--batch", type=int, default=32)
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"# PyTorch {torch.__version__} training step, SGD, {args.threads} thread(s), median of {args.reps} (ms/step)")
    table = {m[0]: m for m in generate.MODELS}
    for name in args.names:
        _, make, seed, shape, options = table[name]
        torch.manual_seed(seed)
        model = make()
        model.train()
        dynamic = "dynamic_axes" in options
        b = args.batch if dynamic else 0
        d = os.path.join(MODELS_DIR, name, "train")
        x = torch.from_numpy(resize(np.load(os.path.join(d, "input.npy")), b))
        y = torch.from_numpy(resize(np.load(os.path.join(d, "target.npy")), b))
        loss_fn = nn.CrossEntropyLoss() if y.dtype == torch.int64 else nn.MSELoss()
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        times = []
        for i in range(args.warmup + args.reps):
            t0 = time.perf_counter()
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            t1 = time.perf_counter()
            if i >= args.warmup:
                times.append(t1 - t0)
        print(f"{name + '.onnx':16s} {x.shape[0]:6d}  {statistics.median(times) * 1e3:10.3f}")
        print(f"  ({name} mean {statistics.mean(times) * 1e3:.3f} ms/step, min {min(times) * 1e3:.3f}, max {max(times) * 1e3:.3f})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
