"""Checks ONNX files written by taso's exporter with Debian's python3-onnx:
the checker with full_check (which runs strict shape inference) and shape
inference whose inferred shapes must equal the value_info and outputs the
file declares. Exit status 1 on any failure."""
import sys

import onnx
from onnx import shape_inference


def dims(vi):
    return [d.dim_value for d in vi.type.tensor_type.shape.dim]


def check(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    declared = {vi.name: dims(vi) for vi in list(model.graph.value_info) + list(model.graph.output)}
    stripped = onnx.ModelProto()
    stripped.CopyFrom(model)
    del stripped.graph.value_info[:]
    inferred = shape_inference.infer_shapes(stripped, check_type=True, strict_mode=True)
    got = {vi.name: dims(vi) for vi in inferred.graph.value_info}
    bad = [(n, d, got[n]) for n, d in declared.items() if n in got and got[n] != d]
    if bad:
        raise ValueError("declared and inferred shapes differ: %s" % bad[:5])
    names = {i.name for i in model.graph.initializer} | {i.name for i in model.graph.input}
    print("%s: ok (%d nodes, %d initializers, %d inputs, shapes of %d tensors agree)" % (
        path, len(model.graph.node), len(model.graph.initializer), len(model.graph.input),
        len([n for n in declared if n in got])))
    return names


def main():
    failed = 0
    for path in sys.argv[1:]:
        try:
            check(path)
        except Exception as e:  # report every file, then fail
            print("%s: FAILED: %s" % (path, e))
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
