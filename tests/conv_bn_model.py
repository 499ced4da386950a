"""Writes a small ResNet-style ONNX model for the batch-normalization
folding test and benchmark: blocks of Conv (no bias) -> BatchNormalization
-> Relu, the second block's output added to its input before the Relu, as
PyTorch exports them. Statistics, scales and shifts are seeded random, with
negative scales among them. With --bias every Conv has a bias B of its own
(as exports that keep the convolution's bias do), so folding the
normalization must also move its scale through that bias and merge the two
shifts. Usage: conv_bn_model.py [--bias] OUT [CHANNELS SIZE]."""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main(out, channels=8, size=12, bias=False):
    rng = np.random.default_rng(7)
    inits, nodes = [], []

    def const(name, array):
        inits.append(numpy_helper.from_array(array.astype(np.float32), name))
        return name

    def conv_bn(x, k, tag):
        w = const(tag + ".w", rng.normal(0, 0.3, (channels, channels, k, k)))
        inputs = [x, w] + ([const(tag + ".b", rng.normal(0, 0.5, channels))] if bias else [])
        nodes.append(helper.make_node("Conv", inputs, [tag + ".conv"],
                                      pads=[k // 2] * 4, kernel_shape=[k, k]))
        stats = [const(tag + ".bn." + n, v) for n, v in (
            ("scale", rng.uniform(-1.5, 1.5, channels)), ("bias", rng.normal(0, 1, channels)),
            ("mean", rng.normal(0, 0.5, channels)), ("var", rng.uniform(0.5, 2, channels)))]
        nodes.append(helper.make_node("BatchNormalization", [tag + ".conv"] + stats,
                                      [tag + ".bn"], epsilon=1e-5))
        return tag + ".bn"

    y = conv_bn("x", 3, "b1")
    nodes.append(helper.make_node("Relu", [y], ["b1.relu"]))
    y = conv_bn("b1.relu", 3, "b2")
    nodes.append(helper.make_node("Add", [y, "b1.relu"], ["b2.sum"]))
    nodes.append(helper.make_node("Relu", ["b2.sum"], ["y"]))
    y = conv_bn("y", 1, "b3")
    nodes.append(helper.make_node("Relu", [y], ["out"]))
    shape = [1, channels, size, size]
    graph = helper.make_graph(nodes, "conv_bn_relu",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--bias"]
    main(args[0], *(int(a) for a in args[1:3]), bias="--bias" in sys.argv[1:])
