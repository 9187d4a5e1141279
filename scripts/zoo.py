#!/usr/bin/env python3
"""The loom model zoo: real network shapes as quantized ONNX with seeded weights.

Each model is built as a float ONNX graph (onnx.helper) with weights drawn from
a seeded numpy generator, then quantized by ONNX Runtime's own quantization
tool and written in the ONNX test-data layout:

  DIR/model.onnx
  DIR/test_data_set_0/input_0.pb     seeded input (float32, NCHW / [1, L, 768])
  DIR/test_data_set_0/output_0.pb    ONNX Runtime's output on it (reference)
  DIR/zoo.json                       name, shapes, MACs, parameters, options

Quantization (onnxruntime.quantization.quantize_static):
  quant_format=QDQ, activation_type=QInt8, weight_type=QInt8, per_channel=True,
  reduce_range=True (7-bit weights, in [-64, 64]: no int16 pair sum of
  ONNX Runtime's u8 x s8 kernels can saturate, on any x86-64 CPU; see
  docs/zoo.md), calibrate_method=MinMax, extra_options ActivationSymmetric=False,
  WeightSymmetric=True; calibration on CALIB_SAMPLES seeded normal samples.
The result is saved with ir_version 8 and default-domain opset 17 (the ONNX
release loom links: newer exports are read through opset_adapt) and checked with
onnx.checker.

Besides ResNet-50, MobileNetV2 and the BERT layer, the zoo has one network per
common family (scripts/zoo_families.py: resnext, regnet, efficientnet,
mobilenetv3, squeezenet, googlenet, densenet, shufflenet, convnext, vit,
encoder, lraspp), each with a "small" slice (a reduced network, 32x32 to 64x64
or 16 tokens) and "full" (the real size at 224x224, batch 1; the default).

Same seed -> byte-identical files.

Usage:
  zoo.py list [--json]
  zoo.py build NAME [--seq L] [--slice S] [--seed N] [--batch B] -o DIR

--batch B: the model's batch dimension is the symbol 'N' (graph input and
outputs, as an exporter's dynamic_axes write it) and the test data is a batch
of B; refused for a graph that fixes its batch (checked with ONNX Runtime).
"""
import argparse
import json
import logging
import math
import os
import shutil
import signal
import sys
import tempfile

OPSET = 17
IR_VERSION = 8
CALIB_SAMPLES = 4
DEFAULT_SEED = 1
BERT_SEQS = (32, 64, 128, 256, 384, 512)
RESNET_SLICES = ("stem", "stage1", "stage2", "stage3", "stage4", "full")
MOBILENET_SLICES = ("stem", "block", "full")
FAMILY_SLICES = ("small", "full")  # the family models (scripts/zoo_families.py)

QUANT_OPTIONS = {
    "quant_format": "QDQ",
    "activation_type": "QInt8",
    "weight_type": "QInt8",
    "per_channel": True,
    "reduce_range": True,
    "calibrate_method": "MinMax",
    "calibration_samples": CALIB_SAMPLES,
    "extra_options": {"ActivationSymmetric": False, "WeightSymmetric": True},
}


class ZooError(Exception):
    pass


def _imports():
    try:
        import numpy  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        raise ZooError("python module missing: %s (run scripts/setup.sh)" % e.name)


# --------------------------------------------------------------------------
# Graph building


class Net:
    """A float ONNX graph under construction with seeded initializers."""

    def __init__(self, seed, shapes_only=False):
        import numpy as np

        self.np = np
        self.rng = np.random.default_rng(seed)
        self.shapes_only = shapes_only  # initializers carry dims, no data (for counting)
        self.nodes = []
        self.inits = []
        self.n = 0

    def name(self, base):
        self.n += 1
        return "%s_%d" % (base, self.n)

    def const(self, base, arr):
        from onnx import numpy_helper

        nm = self.name(base)
        self.inits.append(numpy_helper.from_array(arr, nm))
        return nm

    def weight(self, base, shape, fan_in, gain=1.0):
        if self.shapes_only:
            import onnx

            nm = self.name(base)
            self.inits.append(onnx.TensorProto(name=nm, dims=list(shape), data_type=onnx.TensorProto.FLOAT))
            return nm
        std = gain * math.sqrt(2.0 / fan_in)
        return self.const(base, (self.rng.standard_normal(shape) * std).astype(self.np.float32))

    def bias(self, base, n):
        return self.const(base, (self.rng.standard_normal(n) * 0.05).astype(self.np.float32))

    def node(self, op, inputs, base=None, **attrs):
        from onnx import helper

        out = self.name(base or op.lower())
        self.nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    # Layers (conv weights OIHW; batch norm folded into weight and bias).
    def conv(self, x, cin, cout, k, stride=1, group=1, gain=1.0):
        w = self.weight("w", (cout, cin // group, k, k), (cin // group) * k * k, gain)
        b = self.bias("b", cout)
        p = k // 2
        return self.node("Conv", [x, w, b], "conv", kernel_shape=[k, k], strides=[stride, stride],
                         pads=[p, p, p, p], group=group)

    def relu(self, x):
        return self.node("Relu", [x])

    def relu6(self, x):
        np = self.np
        lo = self.const("zero", np.array(0.0, np.float32))
        hi = self.const("six", np.array(6.0, np.float32))
        return self.node("Clip", [x, lo, hi], "relu6")

    def linear(self, x, fin, fout, gain=1.0):
        """x @ W + b as MatMul + Add (the form transformer exporters write)."""
        w = self.weight("w", (fin, fout), fin, gain)
        b = self.bias("b", fout)
        return self.node("Add", [self.node("MatMul", [x, w]), b])

    def model(self, graph_name, in_name, in_shape, out, out_shape):
        from onnx import TensorProto, helper

        g = helper.make_graph(self.nodes, graph_name,
                              [helper.make_tensor_value_info(in_name, TensorProto.FLOAT, in_shape)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, out_shape)], self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="loom-zoo",
                              producer_version="1")
        m.ir_version = IR_VERSION
        return m


def resnet50(seed, slice_="full", shapes_only=False):
    """ResNet-50 v1.5 (stride in the 3x3 conv), 224x224, batch 1, BN folded."""
    net = Net(seed, shapes_only)
    x = net.relu(net.conv("input", 3, 64, 7, stride=2))
    x = net.node("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    shape = [1, 64, 56, 56]
    stages = [(64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)]
    n_stages = {"stem": 0, "stage1": 1, "stage2": 2, "stage3": 3, "stage4": 4, "full": 4}[slice_]
    cin = 64
    for si, (width, blocks, stride) in enumerate(stages[:n_stages]):
        for bi in range(blocks):
            s = stride if bi == 0 else 1
            cout = width * 4
            y = net.relu(net.conv(x, cin, width, 1))
            y = net.relu(net.conv(y, width, width, 3, stride=s))
            y = net.conv(y, width, cout, 1, gain=0.25)  # residual branch starts small
            sc = net.conv(x, cin, cout, 1, stride=s) if (s != 1 or cin != cout) else x
            x = net.relu(net.node("Add", [y, sc], "add"))
            cin = cout
        hw = 56 // (2 ** si)
        shape = [1, cin, hw, hw]
    out_shape = shape
    if slice_ == "full":
        x = net.node("GlobalAveragePool", [x], "gap")
        x = net.node("Flatten", [x], "flatten", axis=1)
        w = net.weight("fc_w", (1000, 2048), 2048)
        b = net.bias("fc_b", 1000)
        x = net.node("Gemm", [x, w, b], "fc", transB=1)
        out_shape = [1, 1000]
    return net.model("resnet50" if slice_ == "full" else "resnet50_" + slice_, "input", [1, 3, 224, 224], x,
                     out_shape)


MOBILENET_V2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
                (6, 320, 1, 1)]  # expansion t, channels c, repeats n, first stride s


def mobilenetv2(seed, slice_="full", shapes_only=False):
    """MobileNetV2 1.0, 224x224, batch 1: inverted residuals with depthwise 3x3 and ReLU6 (Clip 0..6)."""
    net = Net(seed, shapes_only)
    x = net.relu6(net.conv("input", 3, 32, 3, stride=2))
    hw, cin = 112, 32
    # "block": the stem and the first three inverted residuals (no expansion;
    # expansion 6 with stride 2; expansion 6 with a residual add).
    limit = {"stem": 0, "block": 3, "full": 10 ** 9}[slice_]
    done = 0
    for t, c, n, s in MOBILENET_V2:
        for i in range(n):
            if done >= limit:
                break
            stride = s if i == 0 else 1
            hidden = cin * t
            y = x
            if t != 1:
                y = net.relu6(net.conv(y, cin, hidden, 1))
            y = net.relu6(net.conv(y, hidden, hidden, 3, stride=stride, group=hidden))
            y = net.conv(y, hidden, c, 1, gain=0.5)  # linear bottleneck
            if stride == 1 and cin == c:
                y = net.node("Add", [x, y], "add")
            x, cin, hw = y, c, hw // stride
            done += 1
    out_shape = [1, cin, hw, hw]
    if slice_ == "full":
        x = net.relu6(net.conv(x, cin, 1280, 1))
        x = net.node("GlobalAveragePool", [x], "gap")
        x = net.node("Flatten", [x], "flatten", axis=1)
        w = net.weight("fc_w", (1000, 1280), 1280)
        b = net.bias("fc_b", 1000)
        x = net.node("Gemm", [x, w, b], "fc", transB=1)
        out_shape = [1, 1000]
    return net.model("mobilenetv2" if slice_ == "full" else "mobilenetv2_" + slice_, "input", [1, 3, 224, 224],
                     x, out_shape)


def bert_layer(seed, seq, shapes_only=False):
    """One BERT-base encoder layer (hidden 768, 12 heads of 64, FFN 3072, GELU
    via Erf, post-LayerNorm), batch 1, no attention mask: the graph a PyTorch
    export at opset 17 writes."""
    net = Net(seed, shapes_only)
    np = net.np
    H, NH, DH, FF = 768, 12, 64, 3072
    x = "input"

    def i64(v):
        return net.const("shape", np.array(v, np.int64))

    def heads(t):
        t = net.node("Reshape", [t, i64([1, seq, NH, DH])], "reshape")
        return t

    q = net.node("Transpose", [heads(net.linear(x, H, H))], "transpose", perm=[0, 2, 1, 3])
    k = net.node("Transpose", [heads(net.linear(x, H, H))], "transpose", perm=[0, 2, 3, 1])
    v = net.node("Transpose", [heads(net.linear(x, H, H))], "transpose", perm=[0, 2, 1, 3])
    s = net.node("MatMul", [q, k], "scores")
    s = net.node("Div", [s, net.const("sqrt_dh", np.array(math.sqrt(DH), np.float32))], "scale")
    p = net.node("Softmax", [s], "softmax", axis=-1)
    ctx = net.node("MatMul", [p, v], "context")
    ctx = net.node("Transpose", [ctx], "transpose", perm=[0, 2, 1, 3])
    ctx = net.node("Reshape", [ctx, i64([1, seq, H])], "reshape")
    a = net.node("Add", [net.linear(ctx, H, H, gain=0.5), x], "residual")

    def layernorm(t):
        g = net.const("ln_g", (1.0 + 0.05 * net.rng.standard_normal(H)).astype(np.float32))
        b = net.const("ln_b", (0.05 * net.rng.standard_normal(H)).astype(np.float32))
        return net.node("LayerNormalization", [t, g, b], "layernorm", axis=-1, epsilon=1e-12)

    a = layernorm(a)
    f = net.linear(a, H, FF)
    # GELU(f) = 0.5 * f * (1 + erf(f / sqrt(2)))
    e = net.node("Erf", [net.node("Div", [f, net.const("sqrt2", np.array(math.sqrt(2.0), np.float32))])])
    e = net.node("Add", [e, net.const("one", np.array(1.0, np.float32))])
    f = net.node("Mul", [net.node("Mul", [f, e]), net.const("half", np.array(0.5, np.float32))], "gelu")
    o = net.node("Add", [net.linear(f, FF, H, gain=0.5), a], "residual")
    o = layernorm(o)
    return net.model("bert_layer_seq%d" % seq, "input", [1, seq, H], o, [1, seq, H])


MODELS = {
    "resnet50": {"doc": "ResNet-50 v1.5, 16 bottleneck blocks, 224x224, batch 1", "slices": RESNET_SLICES},
    "mobilenetv2": {"doc": "MobileNetV2 1.0, 17 inverted residuals (depthwise 3x3, ReLU6), 224x224, batch 1",
                    "slices": MOBILENET_SLICES},
    "bert": {"doc": "BERT-base encoder layer: hidden 768, 12 heads, FFN 3072, GELU, LayerNorm", "seqs": BERT_SEQS},
    # One network per family (scripts/zoo_families.py), "small" and "full" (224x224, batch 1).
    "resnext": {"doc": "ResNeXt-50 32x4d: bottlenecks with grouped 3x3 convs (32 groups)", "slices": FAMILY_SLICES},
    "regnet": {"doc": "RegNetY-400MF: grouped 3x3 (group width 8), squeeze-excite (Sigmoid, broadcast Mul)",
               "slices": FAMILY_SLICES},
    "efficientnet": {"doc": "EfficientNet-B0: MBConv, depthwise 3x3/5x5, SiLU as x*Sigmoid(x), squeeze-excite",
                     "slices": FAMILY_SLICES},
    "mobilenetv3": {"doc": "MobileNetV3-Large: HardSwish, squeeze-excite with HardSigmoid, depthwise 3x3/5x5",
                    "slices": FAMILY_SLICES},
    "squeezenet": {"doc": "SqueezeNet 1.1: fire modules (squeeze 1x1, expand 1x1 + 3x3, Concat), MaxPool",
                   "slices": FAMILY_SLICES},
    "googlenet": {"doc": "GoogLeNet (Inception v1): four-branch inception modules joined by Concat",
                  "slices": FAMILY_SLICES},
    "densenet": {"doc": "DenseNet-121: BatchNormalization-Relu-conv dense layers, Concat, AveragePool transitions",
                 "slices": FAMILY_SLICES},
    "shufflenet": {"doc": "ShuffleNetV2 x1.0: Split in halves, channel shuffle (Reshape-Transpose-Reshape), Concat",
                   "slices": FAMILY_SLICES},
    "convnext": {"doc": "ConvNeXt-T: depthwise 7x7, NHWC LayerNorm, MatMul MLP with GELU, layer scale",
                 "slices": FAMILY_SLICES},
    "vit": {"doc": "ViT-Tiny/16: patch conv, class token, 12 pre-LN attention blocks (3 heads), GELU MLP",
            "slices": FAMILY_SLICES},
    "encoder": {"doc": "4 TransformerEncoderLayers (d 384, 6 heads, FFN 1536, seq 128), dynamo export form",
                "slices": FAMILY_SLICES},
    "lraspp": {"doc": "LR-ASPP on MobileNetV3-Large: SE-style gate, bilinear Resize, low-level Add, 21 classes",
               "slices": FAMILY_SLICES},
}


def _families():
    """scripts/zoo_families.py, the builders of the family models (beside this file)."""
    here = os.path.dirname(os.path.abspath(__file__))
    if here not in sys.path:
        sys.path.insert(0, here)
    import zoo_families

    return zoo_families


def float_model(name, seq, slice_, seed, shapes_only=False):
    if name == "resnet50":
        return resnet50(seed, slice_ or "full", shapes_only)
    if name == "mobilenetv2":
        return mobilenetv2(seed, slice_ or "full", shapes_only)
    if name == "bert":
        return bert_layer(seed, seq, shapes_only)
    return _families().float_model(Net, name, slice_ or "full", seed, shapes_only)


def validate_args(name, seq, slice_):
    if name not in MODELS:
        raise ZooError("unknown model '%s' (models: %s)" % (name, ", ".join(MODELS)))
    info = MODELS[name]
    if name == "bert":
        if slice_ is not None:
            raise ZooError("--slice: bert has no slices (use --seq)")
        if seq is None:
            raise ZooError("--seq: bert needs a sequence length (one of %s)" % ", ".join(map(str, BERT_SEQS)))
        if seq not in BERT_SEQS:
            raise ZooError("--seq %d: not a zoo sequence length (one of %s)" % (seq, ", ".join(map(str, BERT_SEQS))))
    else:
        if seq is not None:
            raise ZooError("--seq: only bert takes a sequence length, not %s" % name)
        if slice_ is not None and slice_ not in info["slices"]:
            raise ZooError("--slice %s: not a slice of %s (one of %s)" % (slice_, name, ", ".join(info["slices"])))


# --------------------------------------------------------------------------
# Counting


def count(model):
    """MACs of Conv/MatMul/Gemm (from inferred shapes) and float parameters."""
    import numpy as np
    import onnx
    from onnx import numpy_helper, shape_inference

    inf = shape_inference.infer_shapes(model)
    shapes = {}
    for vi in list(inf.graph.value_info) + list(inf.graph.input) + list(inf.graph.output):
        shapes[vi.name] = [d.dim_value for d in vi.type.tensor_type.shape.dim]
    for t in model.graph.initializer:
        shapes[t.name] = list(t.dims)
    macs = 0
    for n in model.graph.node:
        if n.op_type == "Conv":
            w = shapes[n.input[1]]
            macs += int(np.prod(shapes[n.output[0]])) * int(np.prod(w[1:]))
        elif n.op_type == "MatMul":
            macs += int(np.prod(shapes[n.output[0]])) * shapes[n.input[0]][-1]
        elif n.op_type == "Gemm":
            macs += int(np.prod(shapes[n.output[0]])) * shapes[n.input[0]][-1]
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer
                 if t.data_type == onnx.TensorProto.FLOAT and len(t.dims) >= 1)
    return macs, params


def describe(name, seq, slice_, seed=DEFAULT_SEED):
    m = float_model(name, seq, slice_, seed, shapes_only=True)
    macs, params = count(m)

    def dims(vi):
        return [d.dim_value for d in vi.type.tensor_type.shape.dim]

    return {
        "name": name,
        "seq": seq,
        "slice": slice_,
        "input": dims(m.graph.input[0]),
        "output": dims(m.graph.output[0]),
        "macs": macs,
        "params": params,
        "nodes": len(m.graph.node),
    }


def variants():
    yield ("resnet50", None, None)
    for s in RESNET_SLICES[:-1]:
        yield ("resnet50", None, s)
    yield ("mobilenetv2", None, None)
    for s in MOBILENET_SLICES[:-1]:
        yield ("mobilenetv2", None, s)
    for L in BERT_SEQS:
        yield ("bert", L, None)
    for name, info in MODELS.items():
        if info.get("slices") is FAMILY_SLICES:
            yield (name, None, None)
            for s in FAMILY_SLICES[:-1]:
                yield (name, None, s)


def cmd_list(args):
    _imports()
    rows = [describe(*v) for v in variants()]
    if args.json:
        print(json.dumps({"models": rows, "quantization": QUANT_OPTIONS, "opset": OPSET, "ir_version": IR_VERSION},
                         indent=2))
        return
    print("loom zoo: float graphs with seeded weights, quantized by ONNX Runtime (QDQ, int8, per-channel weights)")
    print()
    for n, info in MODELS.items():
        print("  %-12s %s" % (n, info["doc"]))
    print()
    print("%-12s %-7s %-6s %-16s %-16s %12s %12s" % ("model", "slice", "seq", "input", "output", "MACs", "params"))
    for r in rows:
        print("%-12s %-7s %-6s %-16s %-16s %12d %12d" % (
            r["name"], r["slice"] or "-", r["seq"] or "-", "x".join(map(str, r["input"])),
            "x".join(map(str, r["output"])), r["macs"], r["params"]))
    print()
    print("build: loom zoo build NAME [--slice S] [--seq L] -o DIR")


# --------------------------------------------------------------------------
# Quantization and test data


class _Progress:
    """Progress of `zoo build` on stderr, as loom's own commands show it
    (host/cli/progress.h): nothing for the first 2 s, then a bar with the
    fraction, elapsed time and ETA on a terminal, or one line every 5 s
    otherwise; LOOM_PROGRESS_INTERVAL=S scales both (0: every update). The
    fraction is by stage, weighted by the stages' measured share of a
    ResNet-50 build: float graph 0.15, the calibrator's set-up 0.25, the
    calibration samples 0.3 (evenly), quantization 0.2, reference outputs
    and files 0.1."""

    def __init__(self, what):
        import time

        self.what = what
        self.clock = time.monotonic
        self.start = self.last = self.clock()
        self.tty = sys.stderr.isatty()
        self.shown = False
        scale = 1.0
        env = os.environ.get("LOOM_PROGRESS_INTERVAL", "")
        try:
            v = float(env) if env else 5.0
            if 0 <= v < 1e6:
                scale = v / 5.0
        except ValueError:
            pass
        self.quiet, self.line = 2.0 * scale, 5.0 * scale

    @staticmethod
    def _dur(s):
        if s < 60:
            return "%.0f s" % s
        if s < 3600:
            return "%d min %02d s" % (s // 60, int(s) % 60)
        return "%d h %02d min" % (s // 3600, int(s // 60) % 60)

    def update(self, f):
        now = self.clock()
        elapsed, since = now - self.start, now - self.last
        if elapsed < self.quiet or (self.shown and since < (0.2 * self.line / 5.0 if self.tty else self.line)):
            return
        if not self.tty and not self.shown and elapsed < self.line:
            return
        f = min(max(f, 0.0), 1.0)
        eta = self._dur(elapsed * (1 - f) / f) if f > 0.01 else "?"
        if self.tty:
            fill = int(round(f * 30))
            sys.stderr.write("\r\033[K%s [%s%s] %3.0f%%  %s, ETA %s" % (self.what, "#" * fill, "." * (30 - fill),
                                                                       100 * f, self._dur(elapsed), eta))
        else:
            sys.stderr.write("loom: %s: %.0f%% after %s, about %s left\n" % (self.what, 100 * f, self._dur(elapsed),
                                                                             eta))
        sys.stderr.flush()
        self.shown, self.last = True, now

    def finish(self):
        if not self.shown:
            return
        if self.tty:
            sys.stderr.write("\r\033[K")
        else:
            sys.stderr.write("loom: %s: done after %s\n" % (self.what, self._dur(self.clock() - self.start)))
        sys.stderr.flush()
        self.shown = False


class _Reader:
    """Seeded calibration samples (standard normal, the input's shape)."""

    def __init__(self, in_name, shape, seed, on_sample=None):
        import numpy as np

        self.on_sample = on_sample

        rng = np.random.default_rng(seed + 1000)
        self.samples = [{in_name: rng.standard_normal(shape).astype(np.float32)} for _ in range(CALIB_SAMPLES)]
        self.i = 0

    def get_next(self):
        if self.i >= len(self.samples):
            if self.on_sample:
                self.on_sample(self.i + 1, len(self.samples))
            return None
        self.i += 1
        if self.on_sample:
            self.on_sample(self.i, len(self.samples))
        return self.samples[self.i - 1]

    def rewind(self):
        self.i = 0


def quantize(fmodel, seed, tmp, progress=None):
    try:
        import onnxruntime  # noqa: F401
        from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static
    except ImportError:
        raise ZooError("python module missing: onnxruntime (run scripts/setup.sh)")
    import onnx

    fpath = os.path.join(tmp, "float.onnx")
    qpath = os.path.join(tmp, "quant.onnx")
    onnx.save(fmodel, fpath)
    # The quantizer logs advice (pre-processing, per-channel axes of rank-1
    # LayerNorm gains) through the root logger; only errors matter here.
    logging.getLogger().setLevel(logging.ERROR)
    inp = fmodel.graph.input[0]
    shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
    on_sample = None
    if progress:
        def on_sample(i, n):
            progress.update(0.4 + 0.3 * (i - 1) / n)
    quantize_static(fpath, qpath, _Reader(inp.name, shape, seed, on_sample), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True,
                    reduce_range=True, calibrate_method=CalibrationMethod.MinMax,
                    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})
    if progress:
        progress.update(0.9)
    q = onnx.load(qpath)
    # The quantizer may raise the opset; the zoo stays at the linked ONNX 1.12 release (opset 17, IR 8).
    for o in q.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = OPSET
    others = [o.domain for o in q.opset_import if o.domain not in ("", "ai.onnx")]
    if others:
        raise ZooError("quantized model uses operator domains outside ONNX: %s" % ", ".join(others))
    q.ir_version = IR_VERSION
    q.producer_name = "loom-zoo"
    q.producer_version = "1"
    del q.metadata_props[:]
    onnx.checker.check_model(q, full_check=True)
    if max(o.version for o in q.opset_import) > OPSET:
        raise ZooError("quantized model needs opset > %d" % OPSET)
    return q


def run_ort(model_bytes, feeds):
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 4  # a failing run raises; its error log would be a second message
    s = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def symbolic_batch(q, name, batch, seed):
    """`q` with dimension 0 of its graph input and outputs the symbol 'N', as
    an exporter's dynamic_axes write it, and no stated intermediate shapes;
    checked by running ONNX Runtime at `batch` against the images one by one.
    A graph that fixes its batch (a Reshape to a constant holding it) cannot
    take it and is refused."""
    import numpy as np
    import onnx

    for vi in list(q.graph.input[:1]) + list(q.graph.output):
        d = vi.type.tensor_type.shape.dim[0]
        d.ClearField("dim_value")
        d.dim_param = "N"
    del q.graph.value_info[:]
    onnx.checker.check_model(q, full_check=True)
    inp = q.graph.input[0]
    shape = [batch] + [d.dim_value for d in inp.type.tensor_type.shape.dim[1:]]
    x = np.random.default_rng(seed + 2000).standard_normal(shape).astype(np.float32)
    data = q.SerializeToString()
    try:
        outs = run_ort(data, {inp.name: x})
        ones = [run_ort(data, {inp.name: x[i:i + 1]}) for i in range(batch)]
    except Exception as e:  # ORT's own errors have no common base class
        import re
        node = re.search(r"running (\w+) node\. Name:'([^']*)'", str(e))
        raise ZooError("%s cannot take a symbolic batch: ONNX Runtime fails at batch %d%s (the graph fixes its batch)" % (
            name, batch, " in %s node '%s'" % node.groups() if node else ": " + str(e).splitlines()[0][:160]))
    for k, o in enumerate(outs):
        per = np.concatenate([one[k] for one in ones])
        if o.shape != per.shape or not np.allclose(o, per, rtol=1e-4, atol=1e-4):
            raise ZooError("%s cannot take a symbolic batch: its output %d at batch %d is not its images' outputs "
                           "(the graph mixes images)" % (name, k, batch))
    return x, outs


def build(name, seq, slice_, seed, out_dir, batch=None):
    _imports()
    import numpy as np
    import onnx
    from onnx import numpy_helper

    validate_args(name, seq, slice_)
    if batch is not None and not 1 <= batch <= 64:
        raise ZooError("--batch %d: must be 1..64" % batch)
    progress = _Progress("zoo build " + name)
    fm = float_model(name, seq, slice_, seed)
    progress.update(0.15)
    macs, params = count(fm)
    parent = os.path.dirname(os.path.abspath(out_dir)) or "."
    if not os.path.isdir(parent):
        raise ZooError("-o %s: parent folder %s does not exist" % (out_dir, parent))
    if os.path.exists(out_dir) and not os.path.isdir(out_dir):
        raise ZooError("-o %s: exists and is not a folder" % out_dir)
    # Build everything in a temporary folder next to the target, then move it
    # into place: a failure leaves nothing half-written.
    try:
        tmp = tempfile.mkdtemp(prefix=".zoo_", dir=parent)
    except OSError as e:
        raise ZooError("-o %s: cannot write in folder %s: %s" % (out_dir, parent, e.strerror))
    try:
        q = quantize(fm, seed, tmp, progress)
        inp = q.graph.input[0]
        if batch is None:
            shape = [d.dim_value for d in inp.type.tensor_type.shape.dim]
            x = np.random.default_rng(seed + 2000).standard_normal(shape).astype(np.float32)
            data = q.SerializeToString()
            outs = run_ort(data, {inp.name: x})
        else:
            x, outs = symbolic_batch(q, name, batch, seed)
            shape = ["N"] + list(x.shape[1:])
            data = q.SerializeToString()
        stage = os.path.join(tmp, "out")
        os.makedirs(os.path.join(stage, "test_data_set_0"))
        with open(os.path.join(stage, "model.onnx"), "wb") as f:
            f.write(data)
        with open(os.path.join(stage, "test_data_set_0", "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(x, inp.name).SerializeToString())
        for i, (o, vi) in enumerate(zip(outs, q.graph.output)):
            with open(os.path.join(stage, "test_data_set_0", "output_%d.pb" % i), "wb") as f:
                f.write(numpy_helper.from_array(np.asarray(o), vi.name).SerializeToString())
        meta = {
            "name": name,
            "seq": seq,
            "slice": slice_,
            "seed": seed,
            "input": shape,
            "output": [d.dim_param or d.dim_value for d in q.graph.output[0].type.tensor_type.shape.dim],
            "macs": macs,
            "params": params,
            "opset": OPSET,
            "ir_version": IR_VERSION,
            "quantization": QUANT_OPTIONS,
            "reference": "onnxruntime %s, CPUExecutionProvider, ORT_ENABLE_ALL, 1 thread" % _ort_version(),
            "ops": sorted({n.op_type for n in q.graph.node}),
        }
        if batch is not None:
            meta["batch"] = batch
        with open(os.path.join(stage, "zoo.json"), "w") as f:
            json.dump(meta, f, indent=2, sort_keys=True)
            f.write("\n")
        if os.path.isdir(out_dir):
            for entry in ("model.onnx", "test_data_set_0", "zoo.json"):
                p = os.path.join(out_dir, entry)
                if os.path.isdir(p):
                    shutil.rmtree(p)
                elif os.path.exists(p):
                    os.remove(p)
            for entry in os.listdir(stage):
                os.rename(os.path.join(stage, entry), os.path.join(out_dir, entry))
        else:
            os.rename(stage, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        progress.finish()
    return meta


def _ort_version():
    import onnxruntime

    return onnxruntime.__version__


def main(argv=None):
    ap = argparse.ArgumentParser(prog="zoo.py", description="loom model zoo")
    sub = ap.add_subparsers(dest="cmd", required=True)
    lp = sub.add_parser("list", help="list the models with shapes, MACs and parameters")
    lp.add_argument("--json", action="store_true")
    bp = sub.add_parser("build", help="build one model into a folder")
    bp.add_argument("name")
    bp.add_argument("--seq", type=int)
    bp.add_argument("--slice", dest="slice_")
    bp.add_argument("--seed", type=int, default=DEFAULT_SEED)
    bp.add_argument("--batch", type=int)
    bp.add_argument("-o", "--output", required=True)
    args = ap.parse_args(argv)
    try:
        if args.cmd == "list":
            cmd_list(args)
        else:
            if args.seed < 0:
                raise ZooError("--seed %d: must be >= 0" % args.seed)
            meta = build(args.name, args.seq, args.slice_, args.seed, args.output, args.batch)
            print("zoo: %s -> %s (%d MACs, %d parameters, ops: %s)" % (
                args.name + ("" if args.slice_ is None else " --slice " + args.slice_) +
                ("" if args.seq is None else " --seq %d" % args.seq) +
                ("" if args.batch is None else " --batch %d" % args.batch), args.output, meta["macs"], meta["params"],
                " ".join(meta["ops"])))
            print("loom zoo: wrote %s" % args.output, file=sys.stderr)
    except ZooError as e:
        print("loom: error: zoo: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        print("loom: error: zoo: %s: %s" % (e.filename or "-o " + str(getattr(args, "output", "")), e.strerror),
              file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("loom: error: zoo: interrupted; nothing written", file=sys.stderr)
        return 130
    return 0


def _terminated(*_):
    # SIGTERM (loom passes an interrupt on, a batch system's time limit) ends
    # a build as Ctrl-C does: the staging folder removed, nothing written.
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminated)
    sys.exit(main())
