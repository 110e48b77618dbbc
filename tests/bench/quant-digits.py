#!/usr/bin/python3
"""Data for tests/bench/quant-digits.sh: scikit-learn's digits, split as
`weir train --seed S --val-fraction 0.2` splits them (Weir's own shuffle,
weir_dataset_permutation, called through ctypes so the held-out samples are
exactly the ones `weir train` reported), and accuracy of saved logits.

  quant-digits.py split LIBWEIR OUTDIR [--seed 1] [--calibration N]
      writes OUTDIR/val_x.npy [n,1,8,8] f32, val_y.npy, calib.npy (the
      first N training samples, default 256)
  quant-digits.py accuracy LOGITS.npy LABELS.npy
"""
import ctypes
import gzip
import os
import sys

import numpy as np

DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"


def split(lib, outdir, seed=1, calibration=256):
    with gzip.open(DIGITS, "rt") as f:
        data = np.loadtxt(f, delimiter=",", dtype=np.float64)
    x = (data[:, :64] / 16.0).astype(np.float32)
    y = data[:, 64].astype(np.int64)
    weir = ctypes.CDLL(lib)
    weir.weir_dataset_permutation.restype = ctypes.POINTER(ctypes.c_int64)
    weir.weir_dataset_permutation.argtypes = [ctypes.c_int64, ctypes.c_uint64]
    n = len(x)
    p = weir.weir_dataset_permutation(n, seed)
    order = np.array([p[i] for i in range(n)], dtype=np.int64)
    x, y = x[order], y[order]
    n_val = int(np.floor(n * 0.2 + 0.5))
    train_x, val_x, val_y = x[:-n_val], x[-n_val:], y[-n_val:]
    os.makedirs(outdir, exist_ok=True)
    np.save(os.path.join(outdir, "val_x.npy"), val_x.reshape(-1, 1, 8, 8))
    np.save(os.path.join(outdir, "val_y.npy"), val_y)
    np.save(os.path.join(outdir, "calib.npy"), train_x[:calibration].reshape(-1, 1, 8, 8))
    print("digits: %d samples, %d for training, %d held out; calibration: the first %d training samples"
          % (n, n - n_val, n_val, min(calibration, n - n_val)))


def accuracy(logits, labels):
    z = np.load(logits)
    y = np.load(labels)
    acc = 100.0 * np.mean(np.argmax(z, axis=1) == y)
    print("%.2f" % acc)


if __name__ == "__main__":
    if sys.argv[1] == "split":
        args = sys.argv[2:]
        seed, cal = 1, 256
        if "--seed" in args:
            seed = int(args[args.index("--seed") + 1])
        if "--calibration" in args:
            cal = int(args[args.index("--calibration") + 1])
        split(args[0], args[1], seed, cal)
    else:
        accuracy(sys.argv[2], sys.argv[3])
