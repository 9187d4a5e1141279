#!/usr/bin/env python3
"""Tiny ONNX models in the forms current PyTorch exporters (and ONNX
Runtime's quantizer after them) write, for loom's importer tests.

Usage:
  export_forms.py OUT_DIR [--seed N]

For each form NAME below this writes

  OUT_DIR/NAME.onnx                             the model
  OUT_DIR/NAME/test_data_set_0/input_0.pb       seeded input (float32)
  OUT_DIR/NAME/test_data_set_0/output_0.pb      ONNX Runtime's output on it

and OUT_DIR/forms.json (per model: file, opset, IR version, op types, what it
exercises). Every model passes onnx.checker (full_check) at the opset and IR
version it is saved with and runs in ONNX Runtime (CPU, ORT_ENABLE_ALL, one
thread, the reference the zoo uses).

Forms:
  conv_opset18 .. conv_opset21
      a small conv net quantized by quantize_static (QDQ, the zoo's options:
      scripts/zoo.py QUANT_OPTIONS) and saved with ir_version 10 at
      default-domain opset 18, 19, 20 and 21: Conv + Relu, Split with the
      num_outputs attribute (opset >= 18), Concat, AveragePool, ReduceMean
      whose axes come as an input (opset >= 18), Sigmoid gate, Mul, Resize
      (linear, half_pixel, scales input).
  conv_bias_identity
      float, opset 17, IR 8 (the TorchScript exporter's form): two Convs
      share one weight initializer and one bias initializer, the second
      Conv's bias reaching it through an Identity node.
  conv_bias_identity_qdq
      the same after quantize_static (whatever ONNX Runtime's quantizer
      makes of the Identity-fed bias).
  gelu_opset20
      MatMul + Add projections around Gelu nodes (opset 20: approximate
      "none" and "tanh") quantized by quantize_static: each Gelu between a
      DequantizeLinear and a QuantizeLinear; opset 20, IR 10.
  gelu_constants_qdq
      a GELU written with Constant nodes (Div by sqrt(2), Erf, Add 1, Mul,
      Mul 0.5, as the TorchScript exporter writes it at opset 17) quantized
      by quantize_static: ONNX Runtime's form of the constants, Constant ->
      QuantizeLinear -> DequantizeLinear feeding the Add (and the Muls);
      opset 17, IR 8.
  encoder_dynamic
      two nn.TransformerEncoderLayer(64, 4 heads, FFN 128, batch_first,
      post-LN) as torch.onnx.export writes them with dynamic_axes {0:
      'batch', 1: 'seq'} on the input and the output: the heads split and
      merged by Reshapes whose targets are computed from Shape(x) (Shape ->
      Gather -> Unsqueeze -> Concat), quantized by quantize_static; opset
      17, IR 8. Input [batch, seq, 64]; its test data is [2, 24, 64].
  cnn_dynamic
      a small CNN exported with dynamic_axes {0: 'N'}: Conv + Relu, strided
      Conv + Relu, GlobalAveragePool, Flatten, Linear (MatMul + Add),
      quantized by quantize_static; opset 17, IR 8. Input [N, 3, 16, 16];
      its test data is [3, 3, 16, 16].

Same seed -> byte-identical files.
"""
import argparse
import json
import logging
import math
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
import zoo  # noqa: E402

DEFAULT_SEED = 1


class FormError(Exception):
    pass


def _net(seed):
    return zoo.Net(seed)


def _model(net, name, in_shape, out, out_shape, opset, ir):
    m = net.model(name, "input", in_shape, out, out_shape)
    set_version(m, opset, ir)
    return m


def set_version(m, opset, ir):
    del m.opset_import[:]
    from onnx import helper

    m.opset_import.extend([helper.make_opsetid("", opset)])
    m.ir_version = ir
    m.producer_name = "loom-export-forms"
    m.producer_version = "1"
    del m.metadata_props[:]


def quantize(fmodel, seed, opset, ir, shape):
    """quantize_static with the zoo's options (scripts/zoo.py quantize), then
    the default-domain opset and IR version set to `opset` and `ir` and the
    result checked there."""
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    tmp = tempfile.mkdtemp(prefix=".forms_")
    try:
        fpath, qpath = os.path.join(tmp, "float.onnx"), os.path.join(tmp, "quant.onnx")
        onnx.save(fmodel, fpath)
        logging.getLogger().setLevel(logging.ERROR)
        inp = fmodel.graph.input[0]
        quantize_static(fpath, qpath, zoo._Reader(inp.name, shape, seed), quant_format=QuantFormat.QDQ,
                        activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True,
                        reduce_range=True, calibrate_method=CalibrationMethod.MinMax,
                        extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})
        q = onnx.load(qpath)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    others = [o.domain for o in q.opset_import if o.domain not in ("", "ai.onnx")]
    if others:
        raise FormError("quantized model uses operator domains outside ONNX: %s" % ", ".join(others))
    set_version(q, opset, ir)
    return q


# --------------------------------------------------------------------------
# The forms (float graphs)


def conv_net(seed):
    """The opset >= 18 conv net (float, opset 18, IR 10)."""
    net = _net(seed)
    np = net.np
    x = net.relu(net.conv("input", 3, 16, 3))
    split = net.name("split")
    a, b = split + "_0", split + "_1"
    from onnx import helper

    net.nodes.append(helper.make_node("Split", [x], [a, b], name=split, axis=1, num_outputs=2))
    a = net.relu(net.conv(a, 8, 8, 3))
    b = net.relu(net.conv(b, 8, 8, 1))
    x = net.node("Concat", [a, b], "concat", axis=1)
    x = net.node("AveragePool", [x], "avgpool", kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0],
                 ceil_mode=0, count_include_pad=1)
    x = net.relu(net.conv(x, 16, 32, 3))
    g = net.node("ReduceMean", [x, net.const("axes", np.array([2, 3], np.int64))], "reducemean", keepdims=1)
    g = net.node("Sigmoid", [net.conv(g, 32, 32, 1)])
    x = net.node("Mul", [x, g], "mul")
    scales = net.const("scales", np.array([1.0, 1.0, 2.0, 2.0], np.float32))
    x = net.node("Resize", [x, "", scales], "resize", coordinate_transformation_mode="half_pixel",
                 cubic_coeff_a=-0.75, mode="linear", nearest_mode="floor")
    x = net.conv(x, 32, 8, 3, gain=0.5)
    return _model(net, "conv_opset18", [1, 3, 32, 32], x, [1, 8, 32, 32], 18, 10)


def conv_bias_identity(seed):
    """Two Convs sharing a weight and a bias initializer; the second bias
    through an Identity (float, opset 17, IR 8)."""
    net = _net(seed)
    x = net.relu(net.conv("input", 3, 8, 3))
    w = net.weight("shared_w", (8, 8, 3, 3), 8 * 9)
    b = net.bias("shared_b", 8)
    attrs = dict(dilations=[1, 1], group=1, kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1])
    x = net.relu(net.node("Conv", [x, w, b], "conv", **attrs))
    b2 = net.node("Identity", [b], "identity")
    x = net.node("Conv", [x, w, b2], "conv", **attrs)
    return _model(net, "conv_bias_identity", [1, 3, 16, 16], x, [1, 8, 16, 16], 17, 8)


def gelu_opset20(seed):
    """MatMul + Add, Gelu (none), MatMul + Add, Gelu (tanh), MatMul + Add
    (float, opset 20, IR 10)."""
    net = _net(seed)
    x = net.node("Gelu", [net.linear("input", 32, 64)], "gelu", approximate="none")
    x = net.node("Gelu", [net.linear(x, 64, 64)], "gelu", approximate="tanh")
    x = net.linear(x, 64, 32, gain=0.5)
    return _model(net, "gelu_opset20", [1, 16, 32], x, [1, 16, 32], 20, 10)


def gelu_constants(seed):
    """MatMul + Add, GELU with its scalars as Constant nodes, MatMul + Add
    (float, opset 17, IR 8)."""
    from onnx import helper, numpy_helper

    net = _net(seed)
    np = net.np

    def constant(base, v):
        out = net.name(base)
        t = numpy_helper.from_array(np.array(v, np.float32), out + "_value")
        net.nodes.append(helper.make_node("Constant", [], [out], name=out, value=t))
        return out

    h = net.linear("input", 32, 64)
    e = net.node("Erf", [net.node("Div", [h, constant("sqrt2", math.sqrt(2.0))])])
    e = net.node("Add", [e, constant("one", 1.0)])
    g = net.node("Mul", [net.node("Mul", [h, e]), constant("half", 0.5)], "gelu")
    x = net.linear(g, 64, 32, gain=0.5)
    return _model(net, "gelu_constants", [1, 16, 32], x, [1, 16, 32], 17, 8)


def encoder_dynamic(seed):
    """Two post-LN encoder layers over [batch, seq, 64] whose Reshape
    targets come from Shape(input) (float, opset 17, IR 8)."""
    net = _net(seed)
    np = net.np
    D, NH, FF = 64, 4, 128
    DH = D // NH

    def i64(base, v):
        return net.const(base, np.array(v, np.int64))

    def dims_of(x, *idx):  # Shape -> Gather(i) -> Unsqueeze: [dim_i] each
        shape = net.node("Shape", [x], "shape")
        return [net.node("Unsqueeze", [net.node("Gather", [shape, i64("index", i)], "gather", axis=0),
                                       i64("axes", [0])], "unsqueeze") for i in idx]

    def ln(x):  # nn.LayerNorm(D)
        g = net.const("ln_g", (1.0 + 0.05 * net.rng.standard_normal(D)).astype(np.float32))
        b = net.const("ln_b", (0.05 * net.rng.standard_normal(D)).astype(np.float32))
        return net.node("LayerNormalization", [x, g, b], "layernorm", axis=-1, epsilon=1e-5)

    def reshape(x, lead, tail):  # Reshape to [batch, seq] + tail
        target = net.node("Concat", lead + [i64("dims", tail)], "concat", axis=0)
        return net.node("Reshape", [x, target], "reshape")

    x = "input"
    for _ in range(2):
        lead = dims_of(x, 0, 1)
        q, k, v = (reshape(net.linear(x, D, D), lead, [NH, DH]) for _ in range(3))
        q = net.node("Transpose", [q], "transpose", perm=[0, 2, 1, 3])  # [b, NH, s, DH]
        k = net.node("Transpose", [k], "transpose", perm=[0, 2, 3, 1])  # [b, NH, DH, s]
        v = net.node("Transpose", [v], "transpose", perm=[0, 2, 1, 3])
        s = net.node("Div", [net.node("MatMul", [q, k], "matmul"),
                             net.const("sqrt_dh", np.array(math.sqrt(DH), np.float32))], "div")
        a = net.node("MatMul", [net.node("Softmax", [s], "softmax", axis=-1), v], "matmul")
        a = reshape(net.node("Transpose", [a], "transpose", perm=[0, 2, 1, 3]), lead, [D])
        x = ln(net.node("Add", [x, net.linear(a, D, D, gain=0.5)], "add"))
        f = net.linear(net.relu(net.linear(x, D, FF)), FF, D, gain=0.5)
        x = ln(net.node("Add", [x, f], "add"))
    return _model(net, "encoder_dynamic", ["batch", "seq", D], x, ["batch", "seq", D], 17, 8)


def unflatten_qkv(seed):
    """A packed projection split as torch's `unflatten(-1, (3, E))` exports
    it (nn.MultiheadAttention): the Reshape target is Concat(Shape[:2],
    [3, E], Shape[3:]), whose last part is empty for a rank-3 input; then
    the three parts summed and projected (float, opset 17, IR 8)."""
    net = _net(seed)
    np = net.np
    E = 32

    def i64(base, v):
        return net.const(base, np.array(v, np.int64))

    h = net.linear("input", E, 3 * E)
    shape = net.node("Shape", [h], "shape")
    head = net.node("Slice", [shape, i64("starts", [0]), i64("ends", [2])], "slice")
    tail = net.node("Slice", [shape, i64("starts", [3]), i64("ends", [2**63 - 1])], "slice")
    target = net.node("Concat", [head, i64("dims", [3, E]), tail], "concat", axis=0)
    parts = net.node("Reshape", [h, target], "reshape")  # [1, 16, 3, E]
    q, k, v = (net.node("Slice", [parts, i64("starts", [i]), i64("ends", [i + 1]), i64("axes", [2])], "slice")
               for i in range(3))
    x = net.node("Add", [net.node("Add", [q, k], "add"), v], "add")
    x = net.node("Reshape", [x, i64("shape", [1, 16, E])], "reshape")
    x = net.linear(x, E, E)
    return _model(net, "unflatten_qkv", [1, 16, E], x, [1, 16, E], 17, 8)


def cnn_dynamic(seed):
    """A batch-N CNN: two Conv + Relu, global pool, Flatten, Linear (float,
    opset 17, IR 8)."""
    net = _net(seed)
    x = net.relu(net.conv("input", 3, 8, 3))
    x = net.relu(net.conv(x, 8, 16, 3, stride=2))
    x = net.node("Flatten", [net.node("GlobalAveragePool", [x], "gap")], "flatten", axis=1)
    x = net.linear(x, 16, 10)
    return _model(net, "cnn_dynamic", ["N", 3, 16, 16], x, ["N", 10], 17, 8)


FORMS = [
    # name, builder, quantize, opset, IR, what it exercises
    ("conv_opset18", conv_net, True, 18, 10,
     "QDQ conv net at opset 18: Split num_outputs, ReduceMean axes input, Resize, AveragePool"),
    ("conv_opset19", conv_net, True, 19, 10, "the same at opset 19"),
    ("conv_opset20", conv_net, True, 20, 10, "the same at opset 20"),
    ("conv_opset21", conv_net, True, 21, 10, "the same at opset 21"),
    ("conv_bias_identity", conv_bias_identity, False, 17, 8,
     "float: a Conv bias through Identity on a shared initializer (TorchScript)"),
    ("conv_bias_identity_qdq", conv_bias_identity, True, 17, 8, "the same after quantize_static"),
    ("gelu_opset20", gelu_opset20, True, 20, 10, "Gelu (approximate none and tanh) between DequantizeLinear and "
     "QuantizeLinear"),
    ("gelu_constants_qdq", gelu_constants, True, 17, 8,
     "GELU constants as Constant -> QuantizeLinear -> DequantizeLinear feeding Add/Mul"),
    ("encoder_dynamic", encoder_dynamic, True, 17, 8,
     "symbolic batch and seq: Reshape targets from Shape -> Gather -> Unsqueeze -> Concat"),
    ("cnn_dynamic", cnn_dynamic, True, 17, 8, "a CNN with a symbolic batch dimension N"),
    ("unflatten_qkv", unflatten_qkv, True, 17, 8,
     "torch's unflatten: a Reshape target concatenating an empty tail of a Shape"),
]

# Forms with symbolic input dimensions: the shape of their calibration
# samples and test data.
EXAMPLE_SHAPES = {"encoder_dynamic": [2, 24, 64], "cnn_dynamic": [3, 3, 16, 16]}


def example_shape(name, inp):
    """The input's stated shape, or the form's example where it is symbolic."""
    dims = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    return EXAMPLE_SHAPES[name] if 0 in dims else dims


# --------------------------------------------------------------------------
# Checks and files


def check_form(name, m):
    """The property each form exists for, on the written model."""
    nodes = list(m.graph.node)
    prod = {o: n for n in nodes for o in n.output}
    inits = {t.name for t in m.graph.initializer}
    ops = {n.op_type for n in nodes}

    def src(t):
        return prod[t].op_type if t in prod else ("initializer" if t in inits else "input")

    def need(cond, what):
        if not cond:
            raise FormError("%s: %s" % (name, what))

    if name.startswith("conv_opset"):
        for op in ("QuantizeLinear", "DequantizeLinear", "Conv", "Split", "ReduceMean", "Resize", "AveragePool"):
            need(op in ops, "no %s" % op)
        for n in nodes:
            if n.op_type == "Split":
                need(any(a.name == "num_outputs" for a in n.attribute) and len(n.input) == 1,
                     "Split without num_outputs")
            if n.op_type == "ReduceMean":
                need(len(n.input) == 2 and n.input[1] in inits and not any(a.name == "axes" for a in n.attribute),
                     "ReduceMean axes not an input")
    elif name.startswith("conv_bias_identity"):
        need(any(n.op_type == "Conv" and len(n.input) > 2 and src(n.input[2]) == "Identity" for n in nodes) or
             (name.endswith("_qdq") and "Identity" in ops), "no Conv bias through Identity")
    elif name == "gelu_opset20":
        gelus = [n for n in nodes if n.op_type == "Gelu"]
        need(sorted(a.s.decode() for n in gelus for a in n.attribute if a.name == "approximate") == ["none", "tanh"],
             "Gelu approximate none and tanh")
        cons = {}
        for n in nodes:
            for i in n.input:
                cons.setdefault(i, []).append(n.op_type)
        for g in gelus:
            need(src(g.input[0]) == "DequantizeLinear", "Gelu input not from DequantizeLinear")
            need(cons.get(g.output[0]) == ["QuantizeLinear"], "Gelu output not to QuantizeLinear only")
    elif name == "gelu_constants_qdq":
        chain = False
        for n in nodes:
            if n.op_type == "Add":
                for i in n.input:
                    if src(i) == "DequantizeLinear":
                        q = prod[i].input[0]
                        if src(q) == "QuantizeLinear" and src(prod[q].input[0]) == "Constant":
                            chain = True
        need(chain, "no Constant -> QuantizeLinear -> DequantizeLinear -> Add")
    elif name == "unflatten_qkv":
        need(any(n.op_type == "Slice" and src(n.input[0]) == "Shape" for n in nodes) and "Reshape" in ops,
             "no Reshape target sliced from a Shape")
    elif name == "cnn_dynamic":
        for io in (m.graph.input[0], m.graph.output[0]):
            need(io.type.tensor_type.shape.dim[0].dim_param == "N", "%s has no batch dimension N" % io.name)
    elif name == "encoder_dynamic":
        for io in (m.graph.input[0], m.graph.output[0]):
            need([d.dim_param for d in io.type.tensor_type.shape.dim][:2] == ["batch", "seq"],
                 "%s not [batch, seq, ...]" % io.name)
        need(all(src(n.input[1]) == "Concat" for n in nodes if n.op_type == "Reshape") and "Shape" in ops,
             "a Reshape target not computed from Shape")


def build(out_dir, seed):
    import numpy as np
    import onnx
    from onnx import numpy_helper

    if not os.path.isdir(out_dir):
        os.makedirs(out_dir)
    floats = {}
    manifest = []
    for name, builder, quant, opset, ir, what in FORMS:
        if builder not in floats:
            floats[builder] = builder(seed)
        fm = floats[builder]
        shape = example_shape(name, fm.graph.input[0])
        if quant:
            m = quantize(fm, seed, opset, ir, shape)
        else:
            m = onnx.ModelProto()
            m.CopyFrom(fm)
            set_version(m, opset, ir)
        m.graph.name = name
        onnx.checker.check_model(m, full_check=True)
        check_form(name, m)
        inp = m.graph.input[0]
        x = np.random.default_rng(seed + 2000).standard_normal(shape).astype(np.float32)
        data = m.SerializeToString()
        outs = zoo.run_ort(data, {inp.name: x})
        with open(os.path.join(out_dir, name + ".onnx"), "wb") as f:
            f.write(data)
        tdir = os.path.join(out_dir, name, "test_data_set_0")
        if os.path.isdir(tdir):
            shutil.rmtree(tdir)
        os.makedirs(tdir)
        with open(os.path.join(tdir, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, inp.name).SerializeToString())
        for i, (o, vi) in enumerate(zip(outs, m.graph.output)):
            with open(os.path.join(tdir, "output_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(o), vi.name).SerializeToString())
        manifest.append({
            "name": name,
            "file": name + ".onnx",
            "test_data": os.path.join(name, "test_data_set_0"),
            "opset": opset,
            "ir_version": ir,
            "quantized": quant,
            "input": shape,
            "output": list(np.asarray(outs[0]).shape),
            "ops": sorted({n.op_type for n in m.graph.node}),
            "exercises": what,
        })
    meta = {"seed": seed, "quantization": zoo.QUANT_OPTIONS if any(f[2] for f in FORMS) else None,
            "reference": "onnxruntime %s, CPUExecutionProvider, ORT_ENABLE_ALL, 1 thread" % zoo._ort_version(),
            "models": manifest}
    with open(os.path.join(out_dir, "forms.json"), "w") as f:
        json.dump(meta, f, indent=2, sort_keys=True)
        f.write("\n")
    return manifest


def main(argv=None):
    ap = argparse.ArgumentParser(prog="export_forms.py",
                                 description="tiny ONNX models in current PyTorch exporter forms (importer tests)")
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = ap.parse_args(argv)
    try:
        if args.seed < 0:
            raise FormError("--seed %d: must be >= 0" % args.seed)
        try:
            import numpy  # noqa: F401
            import onnx  # noqa: F401
            import onnxruntime  # noqa: F401
        except ImportError as e:
            raise FormError("python module missing: %s (run scripts/setup.sh)" % e.name)
        for m in build(args.out_dir, args.seed):
            print("export_forms: %-24s opset %d, IR %d: %s" % (m["file"], m["opset"], m["ir_version"],
                                                                " ".join(m["ops"])))
    except (FormError, zoo.ZooError) as e:
        print("loom: error: export_forms: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("loom: error: export_forms: %s: %s" % (e.filename or args.out_dir, e.strerror), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
