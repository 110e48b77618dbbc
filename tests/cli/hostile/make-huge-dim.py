#!/usr/bin/env python3
"""Writes huge-dim.onnx: Relu on one f32 input of shape [2^62], the
70-byte model of issue 11 case 1 (the element count times 4 bytes overflows
64 bits).  Hand-encoded protobuf, so it needs no onnx package."""
import sys


def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def string(num, s):
    return field(num, 2, s.encode())


def value_info(name, dim):
    dimension = field(1, 0, dim)                       # Dimension.dim_value
    shape = field(1, 2, dimension)                     # TensorShapeProto.dim
    tensor = field(1, 0, 1) + field(2, 2, shape)       # elem_type FLOAT, shape
    type_proto = field(1, 2, tensor)                   # TypeProto.tensor_type
    return string(1, name) + field(2, 2, type_proto)


dim = int(sys.argv[2]) if len(sys.argv) > 2 else 1 << 62
node = string(1, "x") + string(2, "y") + string(4, "Relu")
graph = (field(1, 2, node) + string(2, "g") +
         field(11, 2, value_info("x", dim)) + field(12, 2, value_info("y", dim)))
model = field(1, 0, 7) + field(7, 2, graph) + field(8, 2, field(2, 0, 13))
with open(sys.argv[1] if len(sys.argv) > 1 else "huge-dim.onnx", "wb") as f:
    f.write(model)
