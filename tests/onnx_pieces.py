#!/usr/bin/python3
"""Small ONNX models of what real exports hold, with their outputs.

    tests/onnx_pieces.py DIR

Writes DIR/NAME.onnx and DIR/NAME/input_0.pb, output_0.pb for each piece
below: the outputs computed here with numpy, independently of taso, so
that `taso-run --inputs DIR/NAME --expect DIR/NAME` checks the import of
each (tests/test_onnx_pieces.sh). The pieces are the import's own tricks:
a Pad taken into the next window, ceil_mode, a rank-5 channel shuffle with
its shape computed by Shape/Gather/Div, layer normalization and GELU,
HardSwish, ReduceMean over the last axis, Slice and Sub.
"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(7)


def conv(x, w, pads):  # NCHW, stride 1, pads top, left, bottom, right
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    n, c, h, wd = x.shape
    m, _, kh, kw = w.shape
    out = np.zeros((n, m, h - kh + 1, wd - kw + 1))
    for i in range(out.shape[2]):
        for j in range(out.shape[3]):
            out[:, :, i, j] = np.einsum("nchw,mchw->nm", x[:, :, i:i + kh, j:j + kw], w)
    return out


def pool(x, k, s, fn):
    oh, ow = (x.shape[2] - k) // s + 1, (x.shape[3] - k) // s + 1
    out = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = fn(x[:, :, i * s:i * s + k, j * s:j * s + k], axis=(2, 3))
    return out


def const(name, v, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(v, dtype=dtype), name)


def model(name, nodes, x, inits, y):
    g = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(y.shape))], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), x, y


def pad_avgpool():
    x = rng.uniform(-1, 1, (1, 3, 8, 8)).astype(np.float32)
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("AveragePool", ["p"], ["y"], kernel_shape=[3, 3])]
    y = pool(np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1))), 3, 1, np.mean)
    return model("pad_avgpool", nodes, x, [const("pads", [0, 0, 1, 1, 0, 0, 1, 1], np.int64)], y)


def pad_conv():
    x = rng.uniform(-1, 1, (1, 3, 7, 7)).astype(np.float32)
    w = rng.uniform(-1, 1, (4, 3, 3, 3)).astype(np.float32)
    nodes = [helper.make_node("Pad", ["x", "pads"], ["p"]),
             helper.make_node("Conv", ["p", "w"], ["y"], pads=[1, 1, 1, 1])]
    y = conv(np.pad(x, ((0, 0), (0, 0), (1, 0), (1, 1))), w, [1, 1, 1, 1])
    return model("pad_conv", nodes, x,
                 [const("pads", [0, 0, 1, 1, 0, 0, 0, 1], np.int64), const("w", w)], y)


def ceil_maxpool():
    x = rng.uniform(-1, 1, (1, 2, 8, 8)).astype(np.float32)
    nodes = [helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3], strides=[2, 2],
                              ceil_mode=1)]
    y = pool(np.pad(x, ((0, 0), (0, 0), (0, 1), (0, 1)), constant_values=-np.inf), 3, 2, np.max)
    assert y.shape == (1, 2, 4, 4)
    return model("ceil_maxpool", nodes, x, [], y)


def channel_shuffle():
    x = rng.uniform(-1, 1, (1, 6, 3, 3)).astype(np.float32)
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "one"], ["c"], axis=0),
        helper.make_node("Div", ["c", "groups"], ["per"]),
        helper.make_node("Unsqueeze", ["per", "zero_axis"], ["per1"]),
        helper.make_node("Concat", ["head", "per1", "tail"], ["five"], axis=0),
        helper.make_node("Reshape", ["x", "five"], ["r5"]),
        helper.make_node("Transpose", ["r5"], ["t5"], perm=[0, 2, 1, 3, 4]),
        helper.make_node("Reshape", ["t5", "back"], ["y"]),
    ]
    y = x.reshape(1, 2, 3, 3, 3).transpose(0, 2, 1, 3, 4).reshape(1, 6, 3, 3)
    inits = [const("one", 1, np.int64), const("groups", 2, np.int64),
             const("zero_axis", [0], np.int64), const("head", [1, 2], np.int64),
             const("tail", [3, 3], np.int64), const("back", [1, 6, 3, 3], np.int64)]
    return model("channel_shuffle", nodes, x, inits, y)


def layernorm_gelu():
    x = rng.uniform(-2, 2, (1, 5, 8)).astype(np.float32)
    s = rng.uniform(0.5, 1.5, 8).astype(np.float32)
    b = rng.uniform(-0.1, 0.1, 8).astype(np.float32)
    nodes = [
        helper.make_node("LayerNormalization", ["x", "s", "b"], ["n"], axis=-1, epsilon=1e-5),
        helper.make_node("Div", ["n", "sqrt2"], ["d"]),
        helper.make_node("Erf", ["d"], ["e"]),
        helper.make_node("Add", ["e", "one"], ["e1"]),
        helper.make_node("Mul", ["n", "e1"], ["m"]),
        helper.make_node("Mul", ["m", "half"], ["y"]),
    ]
    xd = x.astype(np.float64)
    mean = xd.mean(-1, keepdims=True)
    var = ((xd - mean) ** 2).mean(-1, keepdims=True)
    n = (xd - mean) / np.sqrt(var + 1e-5) * s + b
    y = n * 0.5 * (1 + np.vectorize(math.erf)(n / math.sqrt(2)))
    inits = [const("s", s), const("b", b), const("sqrt2", math.sqrt(2)), const("one", 1.0),
             const("half", 0.5)]
    return model("layernorm_gelu", nodes, x, inits, y)


def hardswish_mean_slice():
    x = rng.uniform(-4, 4, (1, 4, 5, 6)).astype(np.float32)
    nodes = [
        helper.make_node("HardSwish", ["x"], ["h"]),
        helper.make_node("Slice", ["h", "starts", "ends", "axes"], ["s"]),
        helper.make_node("Sub", ["s", "shift"], ["d"]),
        helper.make_node("ReduceMean", ["d"], ["y"], axes=[-1], keepdims=0),
    ]
    h = x * np.clip(x / 6 + 0.5, 0, 1)
    y = (h[:, 1:3] - 0.25).mean(-1)
    inits = [const("starts", [1], np.int64), const("ends", [3], np.int64),
             const("axes", [1], np.int64), const("shift", 0.25)]
    return model("hardswish_mean_slice", nodes, x, inits, y)


PIECES = [pad_avgpool, pad_conv, ceil_maxpool, channel_shuffle, layernorm_gelu,
          hardswish_mean_slice]


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tests/onnx_pieces.py DIR")
    out = sys.argv[1]
    for piece in PIECES:
        m, x, y = piece()
        onnx.checker.check_model(m)
        name = m.graph.name
        os.makedirs(os.path.join(out, name), exist_ok=True)
        onnx.save(m, os.path.join(out, name + ".onnx"))
        for kind, v in (("input", x), ("output", y)):
            t = numpy_helper.from_array(v.astype(np.float32), "x" if kind == "input" else "y")
            with open(os.path.join(out, name, kind + "_0.pb"), "wb") as f:
                f.write(t.SerializeToString())
        print(name)


if __name__ == "__main__":
    main()
