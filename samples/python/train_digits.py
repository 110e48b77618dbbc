#!/usr/bin/env python3
"""Train the digits model from Python.

Loads scikit-learn's 1,797 handwritten 8x8 digits (python3-sklearn), scales
the pixels to [0, 1], holds out 20%, and trains samples/models/digits_mlp.onnx
with Weir's compiled training program (Adam), one epoch at a time with a
fresh shuffle, printing the held-out accuracy after each.  Writes the
per-epoch figures (epochs.csv) and the trained model (digits_mlp.trained.onnx)
into the output directory.

  python3 samples/python/train_digits.py --epochs 10 --output-dir out
"""

import argparse
import csv
import os
import sys
import time

import numpy as np

try:
    import weir
except ImportError:  # from the source tree: <source>/python/weir.py
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
    import weir

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(os.path.dirname(HERE), "models", "digits_mlp.onnx")


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--model", default=MODEL)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1,
                   help="OpenMP threads of the training program (0: the default)")
    p.add_argument("--output-dir", default=".")
    return p.parse_args()


def main():
    args = parse_args()
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    rng = np.random.default_rng(args.seed)
    order = rng.permutation(len(x))
    n_val = round(0.2 * len(x))
    train_idx, val_idx = order[:-n_val], order[-n_val:]
    x_val, y_val = x[val_idx], y[val_idx]
    print("digits: %d samples of %d features, %d for training, %d held out"
          % (len(x), x.shape[1], len(train_idx), n_val))

    t0 = time.perf_counter()
    trainer = weir.trainer(args.model, x.shape[1], optimizer="adam", lr=args.lr,
                           batch=args.batch, steps_per_call=4, epochs=1, seed=args.seed,
                           threads=args.threads)
    print("training program compiled in %.3f s" % (time.perf_counter() - t0))

    os.makedirs(args.output_dir, exist_ok=True)
    rows = []
    for epoch in range(1, args.epochs + 1):
        idx = rng.permutation(train_idx)
        t0 = time.perf_counter()
        trainer.fit(weir.dataset(x[idx], y[idx], "digits"), None)
        seconds = time.perf_counter() - t0
        acc, loss = weir.evaluate_trainer(trainer, x_val, y_val)
        rows.append({"epoch": epoch, "steps": trainer.steps(), "seconds": seconds,
                     "val_accuracy": acc, "val_loss": loss})
        print("epoch %2d: %4d steps, %.3f s, held-out accuracy %.4f, loss %.4f"
              % (epoch, trainer.steps(), seconds, acc, loss))

    logits = weir.predict(trainer, x_val)
    agree = float(np.mean(np.argmax(logits, axis=1) == y_val))
    assert abs(agree - rows[-1]["val_accuracy"]) < 1e-9, (agree, rows[-1])

    with open(os.path.join(args.output_dir, "epochs.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    out = os.path.join(args.output_dir, "digits_mlp.trained.onnx")
    trainer.save_onnx(out)
    print("wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
