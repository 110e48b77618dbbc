#!/usr/bin/python3
"""Writes scalar-param.onnx next to this script: a model whose parameters
test the training programs' selection rule (tests/core/test-train-params.c).

    y = (x @ fc.weight + /scale/Constant_output_0) * temperature

fc.weight [4, 2] and temperature (rank 0, a learned scalar) are ordinary
initializers; /scale/Constant_output_0 [2] is an initializer named like a
node output that PyTorch's exporter folded into a constant.  Run with
Debian's /usr/bin/python3 (python3-onnx); deterministic bytes.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
w = numpy_helper.from_array(
    np.arange(8, dtype=np.float32).reshape(4, 2) / 8 - 0.4, "fc.weight")
b = numpy_helper.from_array(np.array([0.5, -0.5], np.float32),
                            "/scale/Constant_output_0")
t = numpy_helper.from_array(np.array(1.5, np.float32), "temperature")
nodes = [
    helper.make_node("MatMul", ["input", "fc.weight"], ["/fc/MatMul_output_0"],
                     name="/fc/MatMul"),
    helper.make_node("Add", ["/fc/MatMul_output_0", "/scale/Constant_output_0"],
                     ["/Add_output_0"], name="/Add"),
    helper.make_node("Mul", ["/Add_output_0", "temperature"], ["output"],
                     name="/Mul"),
]
graph = helper.make_graph(
    nodes, "scalar_param",
    [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 4])],
    [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 2])],
    [w, b, t])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)],
                          producer_name="make-scalar-param.py")
model.ir_version = 7
onnx.checker.check_model(model, full_check=True)
onnx.save(model, os.path.join(HERE, "scalar-param.onnx"))
