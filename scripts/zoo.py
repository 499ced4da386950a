#!/usr/bin/python3
"""The model zoo: real torchvision networks exported to ONNX.

    scripts/zoo.py graphs [--out data/zoo] [--only a,b] [--fresh]
    scripts/zoo.py full OUT [--only a,b] [--fresh]

`graphs` writes each network's graph-only ONNX file (float weights kept
as name, type and shape; their data marked "taso-seeded", which taso's
importer fills from the model's seed as it does for built-in models) and
data/zoo/manifest.csv. `full` writes OUT/NAME.onnx with all its weights
and OUT/NAME/input_0.pb, output_0.pb: a seeded input and PyTorch's own
output for it, for `taso-run --inputs OUT/NAME --expect OUT/NAME`.

Needs Debian's python3-torch and python3-torchvision (`scripts/setup.sh
zoo` installs them); neither the main job nor the tests do. Runs under
/usr/bin/python3, the interpreter those packages are for. Every network
gets random weights from a fixed seed (no download), batch norm
statistics included, so that a folded normalization is a real test.
"""
import argparse
import collections
import csv
import io
import os
import sys
import warnings

# name, input size, opset. Opset 14 is torch 1.13's default; the networks
# with layer normalization use 17, where it is one operator.
ZOO = [
    ("resnet18", 224, 14),
    ("resnet34", 224, 14),
    ("resnet50", 224, 14),
    ("resnet101", 224, 14),
    ("resnet152", 224, 14),
    ("wide_resnet50_2", 224, 14),
    ("resnext50_32x4d", 224, 14),
    ("resnext101_32x8d", 224, 14),
    ("vgg11", 224, 14),
    ("vgg13", 224, 14),
    ("vgg16", 224, 14),
    ("vgg19", 224, 14),
    ("vgg11_bn", 224, 14),
    ("vgg13_bn", 224, 14),
    ("vgg16_bn", 224, 14),
    ("vgg19_bn", 224, 14),
    ("densenet121", 224, 14),
    ("densenet161", 224, 14),
    ("densenet169", 224, 14),
    ("densenet201", 224, 14),
    ("googlenet", 224, 14),
    ("inception_v3", 299, 14),
    ("mobilenet_v2", 224, 14),
    ("mobilenet_v3_small", 224, 14),
    ("mobilenet_v3_large", 224, 14),
    ("mnasnet0_5", 224, 14),
    ("mnasnet0_75", 224, 14),
    ("mnasnet1_0", 224, 14),
    ("mnasnet1_3", 224, 14),
    ("shufflenet_v2_x0_5", 224, 14),
    ("shufflenet_v2_x1_0", 224, 14),
    ("shufflenet_v2_x1_5", 224, 14),
    ("shufflenet_v2_x2_0", 224, 14),
    ("squeezenet1_0", 224, 14),
    ("squeezenet1_1", 224, 14),
    ("efficientnet_b0", 224, 14),
    ("efficientnet_b1", 240, 14),
    ("efficientnet_b2", 288, 14),
    ("efficientnet_b3", 300, 14),
    ("regnet_x_400mf", 224, 14),
    ("regnet_x_800mf", 224, 14),
    ("regnet_x_1_6gf", 224, 14),
    ("regnet_y_400mf", 224, 14),
    ("regnet_y_800mf", 224, 14),
    ("regnet_y_1_6gf", 224, 14),
    ("alexnet", 224, 14),
    ("convnext_tiny", 224, 17),
    ("vit_b_16", 224, 17),
]

# Offered by torchvision 0.14.1 and left out, with why (taso's import
# refuses them, naming the nodes).
NOT_YET = {
    "swin_t": "its window partition reshapes to rank 6 (1x8x7x8x7x96); import holds rank 4 "
              "plus leading unit axes",
}

SEEDED = "taso-seeded"  # the marker taso's importer knows
KEEP_BELOW = 16  # float initializers of fewer elements keep their values


def die(msg):
    print("zoo.py: " + msg, file=sys.stderr)
    sys.exit(2)


def imports():
    try:
        import torch
        import torchvision
        import onnx
    except ImportError as e:
        die("%s: run `bash scripts/setup.sh zoo` (Debian's python3-torch, "
            "python3-torchvision, python3-onnx) and use /usr/bin/python3" % e)
    return torch, torchvision, onnx


def build(torch, torchvision, name):
    """The network with seeded random weights and normalization statistics."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kw = {"weights": None}
        if name in ("googlenet", "inception_v3"):
            kw["aux_logits"] = False
            kw["init_weights"] = True
        model = torchvision.models.get_model(name, **kw)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():  # a weight left at zero (ViT's head) makes the output say nothing
        for prm in model.parameters():
            if prm.dim() > 1 and not prm.any():
                prm.copy_(torch.randn(prm.shape, generator=g) * 0.02)
    for mod in model.modules():
        if isinstance(mod, torch.nn.modules.batchnorm._BatchNorm):
            c = mod.num_features
            mod.running_mean.copy_(torch.rand(c, generator=g) * 0.2 - 0.1)
            mod.running_var.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
            with torch.no_grad():
                mod.weight.copy_(torch.rand(c, generator=g) * 0.5 + 0.75)
                mod.bias.copy_(torch.rand(c, generator=g) * 0.2 - 0.1)
    return model.eval()


def export(torch, model, size, opset):
    """The ONNX model (a ModelProto) and the seeded input it was traced with."""
    import onnx
    g = torch.Generator().manual_seed(2)
    x = torch.rand(1, 3, size, size, generator=g) * 2 - 1
    buf = io.BytesIO()
    # Not under no_grad: there PyTorch 1.13's attention takes a fused path
    # that it cannot export.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, x, buf, opset_version=opset, input_names=["input"],
                          output_names=["output"], do_constant_folding=True)
    return onnx.load_from_string(buf.getvalue()), x


def graph_only(onnx, mp):
    """mp with every float initializer of KEEP_BELOW or more elements
    stripped to its name, type and shape, marked SEEDED."""
    for t in mp.graph.initializer:
        if t.data_type not in (onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE):
            continue
        n = 1
        for d in t.dims:
            n *= d
        if n < KEEP_BELOW:
            continue
        t.ClearField("raw_data")
        t.ClearField("float_data")
        t.ClearField("double_data")
        t.data_location = onnx.TensorProto.EXTERNAL
        del t.external_data[:]
        e = t.external_data.add()
        e.key, e.value = "location", SEEDED
    return mp


def op_counts(mp):
    c = collections.Counter(n.op_type for n in mp.graph.node)
    return " ".join("%s:%d" % (k, c[k]) for k in sorted(c))


def family(torchvision, name):
    """The family as torchvision names it: the module of the builder."""
    fn = torchvision.models.get_model_builder(name)
    return fn.__module__.rsplit(".", 1)[-1]


def write_new(path, data, fresh):
    if os.path.exists(path) and not fresh:
        die("%s exists; --fresh replaces it" % path)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def selected(only):
    names = [z[0] for z in ZOO]
    if not only:
        return ZOO
    want = only.split(",")
    for w in want:
        if w not in names:
            die("--only: no network %s in the zoo (one of: %s)" % (w, ", ".join(names)))
    return [z for z in ZOO if z[0] in want]


def cmd_graphs(args):
    torch, torchvision, onnx = imports()
    os.makedirs(args.out, exist_ok=True)
    manifest = os.path.join(args.out, "manifest.csv")
    rows = {}
    if os.path.exists(manifest):
        with open(manifest) as f:
            rows = {r["name"]: r for r in csv.DictReader(f)}
    zoo = selected(args.only)
    failed = []
    for i, (name, size, opset) in enumerate(zoo):
        print("[%d/%d] %s" % (i + 1, len(zoo), name), flush=True)
        try:
            mp, _ = export(torch, build(torch, torchvision, name), size, opset)
        except Exception as e:  # one network's failure does not stop the rest
            print("zoo.py: %s: %s" % (name, str(e).split("\n")[0]), file=sys.stderr)
            failed.append(name)
            continue
        mp.graph.name = name
        write_new(os.path.join(args.out, name + ".onnx"),
                  graph_only(onnx, mp).SerializeToString(), args.fresh)
        rows[name] = {"name": name, "source": "torchvision %s models.%s" %
                      (torchvision.__version__.split("a")[0], name),
                      "family": family(torchvision, name),
                      "input": "1x3x%dx%d" % (size, size), "opset": opset,
                      "nodes": len(mp.graph.node), "operators": op_counts(mp)}
        write_manifest(manifest, rows)
    print("wrote %d graph-only models and %s" % (len(zoo) - len(failed), manifest))
    if failed:
        die("not exported: " + ", ".join(failed))


def write_manifest(path, rows):
    order = [z[0] for z in ZOO]
    out = io.StringIO()
    w = csv.DictWriter(out, ["name", "source", "family", "input", "opset", "nodes", "operators"],
                       lineterminator="\n")
    w.writeheader()
    for name in sorted(rows, key=lambda n: order.index(n) if n in order else len(order)):
        w.writerow(rows[name])
    write_new(path, out.getvalue().encode(), True)


def cmd_full(args):
    torch, torchvision, onnx = imports()
    from onnx import numpy_helper
    os.makedirs(args.out, exist_ok=True)
    zoo = selected(args.only)
    for i, (name, size, opset) in enumerate(zoo):
        print("[%d/%d] %s" % (i + 1, len(zoo), name), flush=True)
        model = build(torch, torchvision, name)
        mp, x = export(torch, model, size, opset)
        mp.graph.name = name
        with torch.no_grad():
            y = model(x)
        d = os.path.join(args.out, name)
        os.makedirs(d, exist_ok=True)
        write_new(os.path.join(args.out, name + ".onnx"), mp.SerializeToString(), args.fresh)
        write_new(os.path.join(d, "input_0.pb"),
                  numpy_helper.from_array(x.numpy(), "input").SerializeToString(), args.fresh)
        write_new(os.path.join(d, "output_0.pb"),
                  numpy_helper.from_array(y.numpy(), "output").SerializeToString(), args.fresh)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n", 2)[2])
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("graphs", help="graph-only files and the manifest")
    g.add_argument("--out", default="data/zoo")
    g.add_argument("--only", help="comma-separated network names")
    g.add_argument("--fresh", action="store_true", help="replace files that exist")
    f = sub.add_parser("full", help="full-weight files with PyTorch's outputs")
    f.add_argument("out")
    f.add_argument("--only", help="comma-separated network names")
    f.add_argument("--fresh", action="store_true", help="replace files that exist")
    p.add_argument("--list", action="store_true", help="print the zoo's networks and exit")
    if "--list" in sys.argv[1:]:
        for name, size, opset in ZOO:
            print("%s %d %d" % (name, size, opset))
        return
    args = p.parse_args()
    (cmd_graphs if args.cmd == "graphs" else cmd_full)(args)


if __name__ == "__main__":
    main()
