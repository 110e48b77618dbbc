#!/usr/bin/python3
"""gen-big-cnn.py OUT.onnx — a small CNN on real-size activations for
test-cli-bandwidth: input [1, 16, 512, 512] (16 MiB), two 3x3
convolutions with a residual Add, a 2x2 max pool, a third convolution,
global average pooling and a fully connected layer (opset 13, weights
from a fixed seed).  Every activation but the last is 4 or 16 MiB, larger
than the caches the test gives the traffic model."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rng = np.random.default_rng(7)
    c, hw = 16, 512

    def weight(name, shape):
        scale = 1.0 / np.sqrt(np.prod(shape[1:]))
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * scale).astype(np.float32), name)

    inits = [weight("w1", [c, c, 3, 3]), weight("w2", [c, c, 3, 3]),
             weight("w3", [c, c, 3, 3]), weight("fc", [10, c]),
             numpy_helper.from_array(np.zeros(10, np.float32), "fcb")]
    conv = dict(kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", **conv),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2", **conv),
        helper.make_node("Add", ["c2", "x"], ["s"], name="residual"),
        helper.make_node("Relu", ["s"], ["r2"], name="relu2"),
        helper.make_node("MaxPool", ["r2"], ["p"], name="pool",
                         kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "w3"], ["c3"], name="conv3", **conv),
        helper.make_node("Relu", ["c3"], ["r3"], name="relu3"),
        helper.make_node("GlobalAveragePool", ["r3"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten"),
        helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], name="fc",
                         transB=1),
    ]
    graph = helper.make_graph(
        nodes, "big_cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                       [1, c, hw, hw])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])],
        inits)
    model = helper.make_model(graph,
                              opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, sys.argv[1])


if __name__ == "__main__":
    main()
