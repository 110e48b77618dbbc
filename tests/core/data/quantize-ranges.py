#!/usr/bin/python3
"""Writes quantize-digits-cnn-ranges.txt: the range of every float tensor of
samples/models/digits_cnn.onnx on its reference input (input_0.npy),
computed with NumPy alone (float64), for tests/core/test-quantize.c.

  /usr/bin/python3 tests/core/data/quantize-ranges.py
"""
import os

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
model = onnx.load(os.path.join(ROOT, "samples/models/digits_cnn.onnx"))
w = {t.name: numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer}
x = np.load(os.path.join(ROOT, "samples/models/digits_cnn/input_0.npy")).astype(np.float64)

n = x.shape[0]
xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)))
conv = np.zeros((n, 8, 8, 8))
for i in range(3):
    for j in range(3):
        conv += np.einsum("nchw,oc->nohw", xp[:, :, i:i + 8, j:j + 8], w["conv.weight"][:, :, i, j])
conv += w["conv.bias"][None, :, None, None]
relu = np.maximum(conv, 0)
pool = relu.reshape(n, 8, 4, 2, 4, 2).max(axis=(3, 5))
flat = pool.reshape(n, 128)
fc1 = flat @ w["fc1.weight"].T + w["fc1.bias"]
relu1 = np.maximum(fc1, 0)
out = relu1 @ w["fc2.weight"].T + w["fc2.bias"]
tensors = {
    "input": x, "_conv_Conv_output_0": conv, "_Relu_output_0": relu,
    "_pool_MaxPool_output_0": pool, "_Flatten_output_0": flat,
    "_fc1_Gemm_output_0": fc1, "_Relu_1_output_0": relu1, "output": out,
}
ref = np.load(os.path.join(ROOT, "samples/models/digits_cnn/output_0.npy"))
assert np.allclose(out, ref, atol=1e-5), "the NumPy forward pass disagrees with PyTorch"
with open(os.path.join(HERE, "quantize-digits-cnn-ranges.txt"), "w") as f:
    f.write(",".join("%s=%.9g:%.9g" % (k, v.min(), v.max()) for k, v in sorted(tensors.items())) + "\n")
