#!/usr/bin/env python3
"""A small CNN (conv, relu, maxpool, residual add, flatten, matmul) quantized
by ONNX Runtime's own quantize_static (QDQ form, int8 or uint8 activations),
run through `loom run model.onnx --check --json` on a backend:
  - the QDQ groups fold into device ops (convs, pool and add on the fabric),
  - the host fallback ops are exactly the graph-edge Q/DQ (the Flatten of
    an NHWC image into NCHW order is a device transpose),
  - every device segment is bit-exact with loom's direct reference,
  - the result is within one output LSB of ONNX Runtime on the same model,
    on every x86-64 CPU: the weights are quantized with reduce_range, and the
    test asserts that no int16 pair sum of ONNX Runtime's u8 x s8 kernels can
    saturate on them (VNNI or not).

The `gap` model (strided conv, depthwise conv, global average pool,
flatten, Gemm with transB) must run as one device segment between the
input QuantizeLinear and the output DequantizeLinear, and `loom compile`
must write its plan.

The `mm3` model (BERT-like [1, S, K] matmuls, bias add, softmax) must run
whole on the fabric, the softmax as ROWNORM.

The `mul` model (the product of two activations, QDQ Mul) must run whole
on the fabric, its Mul as an ELTWISE multiply.

The `attn` model (one multi-head self-attention block: Q/K/V projections
with bias, head split by Reshape and Transpose, QK^T, scaling, softmax,
context, head merge, output projection) must run whole on the fabric:
the Softmax as ROWNORM (the integer softmax of docs/spec/isa.md), the
scaling Div as a table lookup (its DQ -> Div -> Q chain evaluated on all
256 inputs at import), the bias adds (a constant
broadcast over rows), the transposes (DMA layout transforms, or nothing
where a matmul reads the data in place) and both products of two
activations (grouped GEMMs, one group a head). Its output agrees with ONNX
Runtime to a cosine similarity of at least 0.999 (several requantized
steps, each within an LSB, so no per-element LSB bound is asserted).

The `gelu` model (a BERT feed-forward block: matmul with bias, GELU as
x * 0.5 * (1 + erf(x / sqrt 2)), matmul with bias) must run whole on the
fabric, the whole GELU as one table lookup: the Div -> Erf chain, then the
+1 and both products, whose constants ONNX Runtime's quantizer quantized
as activations, joined to it (cosine similarity >= 0.999 asserted, as for
`attn`).

The `ln` model (projection with bias, residual add, LayerNormalization,
opset 17) must run whole on the fabric, the normalization as ROWNORM.
The `attn`, `ln` and `gelu` models (several requantized steps in a row)
are held to a cosine similarity of at least 0.999 with ONNX Runtime, the
others (`mm3` too, its softmax approximated) to one output LSB.

With a CPU model as fifth argument (e.g. Haswell: AVX2 without VNNI), ONNX
Runtime also runs under `qemu-x86_64 -cpu CPU` and must compute the same
output as on this CPU, element for element.

The `bn` model (conv, relu, max pool, then a standalone BatchNormalization
with no conv right before it to fold into, as DenseNet writes it) must run
whole on the fabric, the normalization as a depthwise 1x1 convolution, and
be identical to ONNX Runtime on at least 99.99 % of its 16384 output
elements.

The `res` model (two residual adds of operands with different scales: one
after a conv, folded into its POSTOP as a rescale, one of two activations,
an ELTWISE add) must be identical to ONNX Runtime on at least 99.9 % of its
4096 output elements: each add rounds its exact sum once.

usage: qdq_test.py LOOM BACKEND {s8,u8} [cnn|gap|mm3|mul|attn|gelu|ln|res|bn] [CPU]
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import ort_peer  # noqa: E402


def build(d, act, kind="cnn"):
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
    rng = np.random.default_rng(7)
    inits = []

    def init(name, arr):
        inits.append(numpy_helper.from_array(arr.astype(np.float32), name))

    shape = None
    if kind == "res":
        # Two residual adds whose operands have different scales: one after a
        # conv (folded into its POSTOP as a rescale), one of two activations
        # (ELTWISE); the output is the last add's, 4096 elements.
        shape = out_shape = [1, 16, 16, 16]
        init("w1", rng.standard_normal((16, 16, 3, 3)) * 0.15)
        init("b1", rng.standard_normal(16) * 0.1)
        init("two", np.array(2.0))
        nodes = [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
            helper.make_node("Add", ["r1", "x"], ["a1"], name="add1"),
            helper.make_node("Mul", ["x", "two"], ["x2"], name="scale2"),
            helper.make_node("Add", ["a1", "x2"], ["y"], name="add2"),
        ]
    elif kind == "bn":
        # A standalone BatchNormalization (DenseNet's pre-activation form:
        # no conv right before it to fold into), after a conv and a max
        # pool; the output is the normalization's, 16384 elements.
        shape = [1, 16, 32, 32]
        out_shape = [1, 64, 16, 16]
        init("w1", rng.standard_normal((64, 16, 3, 3)) * 0.2)
        init("bn_g", rng.uniform(0.2, 3.0, 64) * rng.choice([-1, 1], 64))
        init("bn_b", rng.standard_normal(64))
        init("bn_m", rng.standard_normal(64) * 0.5)
        init("bn_v", rng.uniform(0.05, 4.0, 64))
        nodes = [
            helper.make_node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
            helper.make_node("MaxPool", ["c1"], ["p"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("BatchNormalization", ["p", "bn_g", "bn_b", "bn_m", "bn_v"], ["y"], name="bn1"),
        ]
    elif kind == "mm3":
        # A BERT-like slice: [1, S, K] x [K, N] matmuls around a bias add and a softmax.
        shape = [1, 8, 32]
        init("w1", rng.standard_normal((32, 16)) * 0.2)
        init("b1", rng.standard_normal(16) * 0.1)
        init("w2", rng.standard_normal((16, 8)) * 0.2)
        nodes = [
            helper.make_node("MatMul", ["x", "w1"], ["m1"], name="mm1"),
            helper.make_node("Add", ["m1", "b1"], ["a1"], name="bias1"),
            helper.make_node("Softmax", ["a1"], ["s1"], name="sm", axis=-1),
            helper.make_node("MatMul", ["s1", "w2"], ["y"], name="mm2"),
        ]
        out_shape = [1, 8, 8]
    elif kind == "ln":
        # A BERT sublayer's end: projection with bias, residual add, LayerNormalization.
        shape = out_shape = [1, 8, 32]
        init("w1", rng.standard_normal((32, 32)) * 0.2)
        init("b1", rng.standard_normal(32) * 0.1)
        init("gamma", 0.8 + 0.4 * rng.random(32))
        init("beta", rng.standard_normal(32) * 0.2)
        nodes = [
            helper.make_node("MatMul", ["x", "w1"], ["m1"], name="mm1"),
            helper.make_node("Add", ["m1", "b1"], ["a1"], name="bias1"),
            helper.make_node("Add", ["a1", "x"], ["r1"], name="residual"),
            helper.make_node("LayerNormalization", ["r1", "gamma", "beta"], ["y"], name="norm", axis=-1,
                             epsilon=1e-5),
        ]
    elif kind == "gelu":
        S, E, F = 8, 16, 32
        shape, out_shape = [1, S, E], [1, S, E]
        init("w1", rng.standard_normal((E, F)) * 0.25)
        init("b1", rng.standard_normal(F) * 0.1)
        init("w2", rng.standard_normal((F, E)) * 0.2)
        init("b2", rng.standard_normal(E) * 0.1)
        init("sqrt2", np.array(np.sqrt(2.0)))
        init("one", np.array(1.0))
        init("half", np.array(0.5))
        nodes = [
            helper.make_node("MatMul", ["x", "w1"], ["h_mm"], name="fc1"),
            helper.make_node("Add", ["h_mm", "b1"], ["h"], name="fc1_bias"),
            helper.make_node("Div", ["h", "sqrt2"], ["h_s"], name="gelu_div"),
            helper.make_node("Erf", ["h_s"], ["h_e"], name="gelu_erf"),
            helper.make_node("Add", ["h_e", "one"], ["h_1"], name="gelu_add"),
            helper.make_node("Mul", ["h", "h_1"], ["h_m"], name="gelu_mul"),
            helper.make_node("Mul", ["h_m", "half"], ["g"], name="gelu_half"),
            helper.make_node("MatMul", ["g", "w2"], ["o_mm"], name="fc2"),
            helper.make_node("Add", ["o_mm", "b2"], ["y"], name="fc2_bias"),
        ]
    elif kind == "attn":
        S, H, D = 8, 2, 8
        E = H * D
        shape, out_shape = [1, S, E], [1, S, E]
        for w in ("q", "k", "v", "o"):
            init("w" + w, rng.standard_normal((E, E)) * 0.25)
            init("b" + w, rng.standard_normal(E) * 0.1)
        inits.append(numpy_helper.from_array(np.array([1, S, H, D], np.int64), "heads"))
        inits.append(numpy_helper.from_array(np.array([1, S, E], np.int64), "merged"))
        init("sqrt_d", np.array(np.sqrt(D)))
        nodes = []
        for w in ("q", "k", "v"):
            nodes += [helper.make_node("MatMul", ["x", "w" + w], [w + "_mm"], name=w + "_proj"),
                      helper.make_node("Add", [w + "_mm", "b" + w], [w + "_b"], name=w + "_bias"),
                      helper.make_node("Reshape", [w + "_b", "heads"], [w + "_h"], name=w + "_split")]
        nodes += [
            helper.make_node("Transpose", ["q_h"], ["q_t"], name="q_t", perm=[0, 2, 1, 3]),
            helper.make_node("Transpose", ["k_h"], ["k_t"], name="k_t", perm=[0, 2, 3, 1]),
            helper.make_node("Transpose", ["v_h"], ["v_t"], name="v_t", perm=[0, 2, 1, 3]),
            helper.make_node("MatMul", ["q_t", "k_t"], ["scores"], name="scores"),
            helper.make_node("Div", ["scores", "sqrt_d"], ["scaled"], name="scale"),
            helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
            helper.make_node("MatMul", ["probs", "v_t"], ["context"], name="context"),
            helper.make_node("Transpose", ["context"], ["c_t"], name="merge_t", perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", ["c_t", "merged"], ["c_m"], name="merge"),
            helper.make_node("MatMul", ["c_m", "wo"], ["o_mm"], name="o_proj"),
            helper.make_node("Add", ["o_mm", "bo"], ["y"], name="o_bias"),
        ]
    elif kind == "mul":
        # A gate: the product of two activations (QDQ Mul), as in squeeze-excite or GELU's x * g(x).
        hw = 8
        init("w1", rng.standard_normal((8, 3, 3, 3)) * 0.2)
        init("b1", rng.standard_normal(8) * 0.1)
        init("w2", rng.standard_normal((8, 8, 1, 1)) * 0.2)
        nodes = [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
            helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv2"),
            helper.make_node("Mul", ["c2", "r1"], ["y"], name="mul1"),
        ]
        shape, out_shape = [1, 3, hw, hw], [1, 8, hw, hw]
    elif kind == "gap":
        hw = 16
        init("w1", rng.standard_normal((16, 3, 3, 3)) * 0.2)
        init("b1", rng.standard_normal(16) * 0.1)
        init("w2", rng.standard_normal((16, 1, 3, 3)) * 0.3)
        init("b2", rng.standard_normal(16) * 0.1)
        init("fc", rng.standard_normal((10, 16)) * 0.2)
        init("fcb", rng.standard_normal(10) * 0.1)
        nodes = [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1], strides=[2, 2]),
            helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
            helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], name="dw", pads=[1, 1, 1, 1], group=16),
            helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
            helper.make_node("GlobalAveragePool", ["r2"], ["g"], name="gap"),
            helper.make_node("Flatten", ["g"], ["f"], name="flat"),
            helper.make_node("Gemm", ["f", "fc", "fcb"], ["y"], name="fc", transB=1),
        ]
    else:
        hw = 8

        init("w1", rng.standard_normal((8, 3, 3, 3)) * 0.2)
        init("b1", rng.standard_normal(8) * 0.1)
        init("w2", rng.standard_normal((8, 8, 3, 3)) * 0.1)
        init("b2", rng.standard_normal(8) * 0.1)
        init("w3", rng.standard_normal((8, 8, 1, 1)) * 0.2)
        init("fc", rng.standard_normal((8 * 4 * 4, 10)) * 0.1)
        nodes = [
            helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
            helper.make_node("MaxPool", ["r1"], ["p1"], name="pool1", kernel_shape=[2, 2], strides=[2, 2]),
            helper.make_node("Conv", ["p1", "w2", "b2"], ["c2"], name="conv2", pads=[1, 1, 1, 1]),
            helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
            helper.make_node("Conv", ["r2", "w3"], ["c3"], name="conv3"),
            helper.make_node("Add", ["c3", "p1"], ["a1"], name="add1"),
            helper.make_node("Flatten", ["a1"], ["f1"], name="flat"),
            helper.make_node("MatMul", ["f1", "fc"], ["y"], name="fc"),
        ]
    if shape is None:
        shape, out_shape = [1, 3, hw, hw], [1, 10]
    g = helper.make_graph(nodes, "small_" + kind, [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17 if kind == "ln" else 13)])
    m.ir_version = 8
    f32 = os.path.join(d, "f32.onnx")
    onnx.save(m, f32)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"x": rng.standard_normal(shape).astype(np.float32)} for _ in range(8)])

        def get_next(self):
            return next(self.it, None)

    q = os.path.join(d, "qdq.onnx")
    quantize_static(f32, q, Reader(), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8 if act == "s8" else QuantType.QUInt8,
                    weight_type=QuantType.QInt8, per_channel=True, reduce_range=True)
    x = rng.standard_normal(shape).astype(np.float32)
    xp = os.path.join(d, "x.pb")
    open(xp, "wb").write(numpy_helper.from_array(x, "x").SerializeToString())
    return q, x, xp


def main():
    loom, backend, act = sys.argv[1], sys.argv[2], sys.argv[3]
    kind = sys.argv[4] if len(sys.argv) > 4 else "cnn"
    cpu = sys.argv[5] if len(sys.argv) > 5 else None
    import onnxruntime as ort
    with tempfile.TemporaryDirectory() as d:
        model, x, xp = build(d, act, kind)
        out = os.path.join(d, "out")
        p = subprocess.run([loom, "run", model, "--inputs", xp, "--outputs", out, "--backend", backend, "--check", "--json"],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
        j = json.loads(p.stdout)
        assert j["bit_exact"] is True, j
        dev = [n for s in j["segments"] for n in s["nodes"]]
        on_fabric = {"gap": ("conv1", "dw", "gap", "flat", "fc"), "mm3": ("mm1", "sm", "mm2"), "ln": ("mm1", "bias1", "residual", "norm"),
                     "cnn": ("conv1", "pool1", "conv2", "conv3", "add1", "fc"),
                     "mul": ("conv1", "conv2", "mul1"),
                     "res": ("conv1", "add1", "add2"),
                     "bn": ("conv1", "pool1", "bn1"),
                     "attn": ("q_proj", "k_proj", "v_proj", "q_bias", "k_bias", "v_bias", "q_split", "k_split",
                              "v_split", "q_t", "k_t", "v_t", "scores", "scale", "softmax", "context", "merge_t", "merge",
                              "o_proj", "o_bias"),
                     "gelu": ("fc1", "fc1_bias", "gelu_half", "fc2", "fc2_bias")}[kind]
        for n in on_fabric:
            assert n in dev, "%s is not on the fabric: %s" % (n, j["notes"])
        if kind == "gelu":
            # The whole GELU is one lookup of fc1_bias's output: its constant
            # add and both products joined the Div -> Erf lookup.
            assert len(dev) == len(on_fabric), dev
        host = sorted(f.split(" ")[1] for f in j["fallback_ops"])
        if kind == "mul":
            assert host == ["(DequantizeLinear)", "(QuantizeLinear)"], j["fallback_ops"]
        elif kind == "gap":
            assert host == ["(DequantizeLinear)", "(QuantizeLinear)"], j["fallback_ops"]
            assert len(j["segments"]) == 1, j["segments"]
            plan = os.path.join(d, "m.plan")
            c = subprocess.run([loom, "compile", model, "-o", plan, "--json"], capture_output=True, text=True, timeout=300)
            assert c.returncode == 0 and os.path.getsize(plan) > 0, c.stderr
        elif kind in ("mm3", "attn", "ln", "gelu"):
            # Softmax and LayerNormalization run as ROWNORM: nothing but the edges on the host.
            assert host == ["(DequantizeLinear)", "(QuantizeLinear)"], j["fallback_ops"]
            assert len(j["segments"]) == 1, j["segments"]
        else:
            assert host == ["(DequantizeLinear)", "(QuantizeLinear)"], j["fallback_ops"]
        # The comparison holds on every x86-64 CPU: no integer kernel of ONNX
        # Runtime can saturate an int16 pair sum on these weights (docs/zoo.md).
        bound, worst = ort_peer.weight_pair_bound(onnx.load(model))
        assert 0 < bound <= ort_peer.INT16_MAX, "weight %s allows int16 pair sums of %d" % (worst, bound)
        got = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "output_0.pb")))
        want = ort.InferenceSession(model, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        m = onnx.load(model)
        y_scale = None
        for n in m.graph.node:
            if n.op_type == "DequantizeLinear" and n.output[0] == "y":
                y_scale = [numpy_helper.to_array(t) for t in m.graph.initializer if t.name == n.input[1]][0]
        if cpu:
            other, feat = ort_peer.ort_on_cpu(cpu, model, xp, os.path.join(d, "ort_cpu.npy"), 600)
            assert not feat["vnni"], "qemu -cpu %s still reports VNNI: %s" % (cpu, feat)
            split = np.abs(other - want) / float(y_scale)
            assert split.max() < 1e-4, "ONNX Runtime on %s (%s) differs from this CPU by %.2f LSB" % (
                cpu, ort_peer.cpu_class(feat), split.max())
        lsb = np.abs(got - want) / float(y_scale)
        if kind in ("attn", "ln", "gelu"):
            cos = float(np.dot(got.ravel(), want.ravel()) / (np.linalg.norm(got) * np.linalg.norm(want)))
            assert cos >= 0.999, "cosine similarity %.5f with ONNX Runtime (max %.1f LSB)" % (cos, lsb.max())
        else:
            assert lsb.max() <= 1.0 + 1e-4, "differs from ONNX Runtime by %.2f LSB" % lsb.max()
        if kind == "res":
            # Each add rounds its exact sum once, as ONNX's QLinearAdd does.
            assert np.mean(lsb < 1e-4) >= 0.999, "%.3f %% identical to ONNX Runtime" % (100 * np.mean(lsb < 1e-4))
        if kind == "bn":
            # Each channel's weight and bias give ONNX Runtime's output on every
            # int8 input (one weight of 127 alone missed about 0.3 %).
            assert np.mean(lsb < 1e-4) >= 0.9999, "%.3f %% identical to ONNX Runtime" % (100 * np.mean(lsb < 1e-4))
        print("ok: %d device ops, fallback %s, %.2f%% of outputs identical to ONNX Runtime, max %.0f LSB" %
              (len(dev), j["fallback_ops"], 100.0 * np.mean(lsb < 1e-4), lsb.max()))


if __name__ == "__main__":
    main()
