#!/usr/bin/python3
"""gen-chain-onnx.py — writes generated ONNX models for the import-scaling
benchmark (tests/bench/import-scaling.sh, docs/onnx.md "Import time").

  gen-chain-onnx.py KIND N OUT.onnx

KIND is one of
  relu  a chain of N Relu nodes over a [1, 16] float input;
  add   a chain of N Add nodes, each adding one shared [16] initializer;
  wide  N parallel Relu branches from the input, summed pairwise in a
        balanced tree of Add nodes (about 2 N nodes in all).
Opset 13, no weights beyond the one initializer."""
import sys

import onnx
from onnx import TensorProto, helper


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    kind, n, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    nodes, inits = [], []
    shape = [1, 16]
    if kind == "relu":
        prev = "x"
        for i in range(n):
            nodes.append(helper.make_node("Relu", [prev], [f"t{i}"], name=f"relu{i}"))
            prev = f"t{i}"
    elif kind == "add":
        inits.append(helper.make_tensor("c", TensorProto.FLOAT, [16], [0.5] * 16))
        prev = "x"
        for i in range(n):
            nodes.append(helper.make_node("Add", [prev, "c"], [f"t{i}"], name=f"add{i}"))
            prev = f"t{i}"
    elif kind == "wide":
        level = []
        for i in range(n):
            nodes.append(helper.make_node("Relu", ["x"], [f"b{i}"], name=f"relu{i}"))
            level.append(f"b{i}")
        k = 0
        while len(level) > 1:
            nxt = []
            for j in range(0, len(level) - 1, 2):
                nodes.append(
                    helper.make_node("Add", [level[j], level[j + 1]], [f"s{k}"], name=f"sum{k}")
                )
                nxt.append(f"s{k}")
                k += 1
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        prev = level[0]
    else:
        sys.exit(f"gen-chain-onnx.py: unknown kind '{kind}' (relu, add, wide)")
    graph = helper.make_graph(
        nodes,
        f"{kind}{n}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info(prev, TensorProto.FLOAT, shape)],
        initializer=inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, out)


if __name__ == "__main__":
    main()
