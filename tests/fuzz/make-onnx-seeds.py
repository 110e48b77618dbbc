#!/usr/bin/env python3
"""Writes the hand-made seeds tests/fuzz/corpus/onnx/hand-*.onnx: tiny ONNX
models encoded by hand in the protobuf wire format (no onnx module needed),
with the shapes of issue 11: dimensions of 2^62, [2^32, 2^32], a negative
dimension, a huge pooling kernel, an initializer of 2^62 elements.

Run from the top of the tree: python3 tests/fuzz/make-onnx-seeds.py
"""
def varint(n):
    n &= (1 << 64) - 1
    out = b''
    while True:
        b = n & 0x7f; n >>= 7
        if n: out += bytes([b | 0x80])
        else: return out + bytes([b])
def f_varint(field, v): return varint(field << 3) + varint(v)
def f_bytes(field, b):
    if isinstance(b, str): b = b.encode()
    return varint(field << 3 | 2) + varint(len(b)) + b
def dim(v): return f_bytes(1, f_varint(1, v) if isinstance(v, int) else f_bytes(2, v))
def vinfo(name, dims, elem=1):
    tensor = f_varint(1, elem)
    if dims is not None: tensor += f_bytes(2, b''.join(dim(d) for d in dims))
    return f_bytes(1, name) + f_bytes(2, f_bytes(1, tensor))
def node(op, ins, outs, attrs=b''):
    return b''.join(f_bytes(1, i) for i in ins) + b''.join(f_bytes(2, o) for o in outs) + f_bytes(4, op) + attrs
def attr_ints(name, vals):  # AttributeProto: name 1, ints 8, type 20 (INTS=7)
    return f_bytes(5, f_bytes(1, name) + b''.join(f_varint(8, v) for v in vals) + f_varint(20, 7))
def model(nodes, inputs, outputs, inits=b'', opset=13):
    g = b''.join(f_bytes(1, n) for n in nodes) + f_bytes(2, 'g') + inits
    g += b''.join(f_bytes(11, i) for i in inputs) + b''.join(f_bytes(12, o) for o in outputs)
    return f_varint(1, 8) + f_bytes(8, f_varint(2, opset)) + f_bytes(7, g)
def tensor(name, dims, elem=1, floats=()):
    import struct
    t = b''.join(f_varint(1, d) for d in dims) + f_varint(2, elem)
    if floats: t += f_bytes(4, struct.pack('<%df' % len(floats), *floats))
    return f_bytes(5, t + f_bytes(8, name))
D = 'tests/fuzz/corpus/onnx/'
big = 1 << 62
open(D + 'hand-relu-2p62.onnx', 'wb').write(model([node('Relu', ['X'], ['Y'])], [vinfo('X', [big])], [vinfo('Y', [big])]))
open(D + 'hand-add-2p32-squared.onnx', 'wb').write(model([node('Add', ['X', 'X'], ['Y'])], [vinfo('X', [1 << 32, 1 << 32])], [vinfo('Y', None)]))
open(D + 'hand-init-2p62.onnx', 'wb').write(model([node('Add', ['X', 'W'], ['Y'])], [vinfo('X', [4])], [vinfo('Y', [4])], tensor('W', [big])))
open(D + 'hand-maxpool-huge-kernel.onnx', 'wb').write(model([node('MaxPool', ['X'], ['Y'], attr_ints('kernel_shape', [big, big]))], [vinfo('X', [1, 1, big, big])], [vinfo('Y', None)]))
open(D + 'hand-symbolic-dim.onnx', 'wb').write(model([node('Relu', ['X'], ['Y'])], [vinfo('X', ['batch', 3])], [vinfo('Y', ['batch', 3])]))
open(D + 'hand-negative-dim.onnx', 'wb').write(model([node('Relu', ['X'], ['Y'])], [vinfo('X', [-5])], [vinfo('Y', [-5])]))
