#!/usr/bin/python3
"""generate_regression.py — the sample regression model, diabetes_mlp.onnx.

A sibling of generate.py for `weir train --loss mse`: a small PyTorch MLP
for scikit-learn's diabetes data set (442 patients, 10 features, one
target: disease progression after a year), exported to ONNX with a
symbolic batch:

    diabetes_mlp.onnx   Linear 10->16, ReLU, Linear 16->1 (193 parameters)

The weights are PyTorch's default initialization under torch.manual_seed(0);
the model is untrained (Weir trains it).  Run it with Debian's interpreter
(python3-torch, python3-onnx, python3-sklearn):

    /usr/bin/python3 samples/models/generate_regression.py [--check]
    /usr/bin/python3 samples/models/generate_regression.py --baseline

--check compares the file on disk with what would be written.  --baseline
prints what scikit-learn's LinearRegression reaches on standardized data
(held-out R² over random 80/20 splits and 5-fold cross-validation), the
figure docs/training.md compares Weir's trained MLP with.  The data is read
from the files python3-sklearn ships; nothing is downloaded.
"""

import argparse
import io
import os
import sys
import warnings

import onnx
import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
NAME = "diabetes_mlp.onnx"


class DiabetesMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(10, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def model_bytes():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    model = DiabetesMLP().eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            model,
            (torch.zeros(4, 10),),
            buf,
            opset_version=13,
            do_constant_folding=True,
            input_names=["input"],
            output_names=["output"],
            dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}},
            training=torch.onnx.TrainingMode.EVAL,
        )
    proto = onnx.load_from_string(buf.getvalue())
    proto.doc_string = ""
    proto.graph.doc_string = ""
    for node in proto.graph.node:
        node.doc_string = ""
    onnx.checker.check_model(proto, full_check=True)
    return proto.SerializeToString()


def baseline():
    import numpy as np
    from sklearn.datasets import load_diabetes
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import cross_val_score, train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    # load_diabetes(scaled=False) reads diabetes_data_raw.csv.gz and
    # diabetes_target.csv.gz from the package, as weir train does
    x, y = load_diabetes(return_X_y=True, scaled=False)
    scores = []
    for seed in range(20):
        xa, xb, ya, yb = train_test_split(x, y, test_size=0.2, random_state=seed)
        model = make_pipeline(StandardScaler(), LinearRegression()).fit(xa, ya)
        scores.append(model.score(xb, yb))
    cv = cross_val_score(make_pipeline(StandardScaler(), LinearRegression()), x, y, cv=5, scoring="r2")
    print(f"LinearRegression, 20 random 80/20 splits: held-out R² mean {np.mean(scores):.4f} "
          f"(min {np.min(scores):.4f}, max {np.max(scores):.4f})")
    print(f"LinearRegression, 5-fold cross-validation: R² mean {cv.mean():.4f} (folds {', '.join(f'{s:.3f}' for s in cv)})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the file on disk; write nothing")
    parser.add_argument("--baseline", action="store_true", help="print scikit-learn's LinearRegression figures")
    args = parser.parse_args()
    if args.baseline:
        baseline()
        return 0
    data = model_bytes()
    path = os.path.join(HERE, NAME)
    if args.check:
        with open(path, "rb") as f:
            same = f.read() == data
        print(f"{NAME}: {'ok' if same else 'differs from what the generator writes'}")
        return 0 if same else 1
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)
    print(f"wrote {path} ({len(data)} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
