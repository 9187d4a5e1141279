#!/usr/bin/env python3
"""Resize on the fabric (docs/onnx.md "Resize on the fabric"): QDQ models
of one Resize each, written as exporters write them (DequantizeLinear ->
Resize -> QuantizeLinear, scales or sizes, int8 and uint8), through
`loom run model.onnx --backend B --check --json --outputs DIR`:
  - a Resize by whole factors (nearest or linear; half_pixel,
    pytorch_half_pixel, asymmetric and tf_half_pixel_for_nn coordinates;
    every nearest_mode; one or both axes) runs on the fabric, the only
    host ops the graph-edge Q/DQ, bit-exact with the direct reference;
  - its codes are the integer semantics of docs/onnx.md, computed here
    independently in exact rationals: y = rq(sum of w (x - zx), sx / (sy
    den)) + zy, ties to even, edges clamped;
  - every code is within one LSB of ONNX Runtime (which rounds float32);
  - sizes computed from Shape -> Slice -> Concat (torchvision's
    `interpolate(size=x.shape[-2:])`), twice with a conv between, fold at
    import and the whole model runs on the fabric;
  - a Resize the fabric has no form of (a factor that is not whole,
    align_corners, a tap weight above 255) stays on the host with its reason, and with
    `--exact-host` a linear one stays there too, identical to ONNX Runtime.

usage: resize_test.py LOOM BACKEND [CONFIG]
"""
import json
import os
import subprocess
import sys
import tempfile
from fractions import Fraction

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper


def model_of(path, shape, out_shape, mode, ct, nm, scales, sizes, xs, xz, ys, yz, u8):
    t = TensorProto.UINT8 if u8 else TensorProto.INT8
    dt = np.uint8 if u8 else np.int8
    inits = [numpy_helper.from_array(np.array(xs, np.float32), "xs"),
             numpy_helper.from_array(np.array(xz, dt), "xz"),
             numpy_helper.from_array(np.array(ys, np.float32), "ys"),
             numpy_helper.from_array(np.array(yz, dt), "yz")]
    names = ["xf", ""]
    if sizes is not None:
        inits.append(numpy_helper.from_array(np.array(sizes, np.int64), "sizes"))
        names += ["", "sizes"]
    else:
        inits.append(numpy_helper.from_array(np.array(scales, np.float32), "scales"))
        names += ["scales"]
    attrs = {"mode": mode, "coordinate_transformation_mode": ct}
    if nm:
        attrs["nearest_mode"] = nm
    nodes = [helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="q_in"),
             helper.make_node("DequantizeLinear", ["xq", "xs", "xz"], ["xf"], name="dq_in"),
             helper.make_node("Resize", names, ["yf"], name="resize", **attrs),
             helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["yq"], name="q_out"),
             helper.make_node("DequantizeLinear", ["yq", "ys", "yz"], ["y"], name="dq_out")]
    g = helper.make_graph(nodes, "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def coord(ct, o, F):
    if ct == "asymmetric":
        return Fraction(o, F)
    if ct == "tf_half_pixel_for_nn":
        return Fraction(2 * o + 1, 2 * F)
    return Fraction(2 * o + 1, 2 * F) - Fraction(1, 2)


def nearest(nm, c):
    fl = c.numerator // c.denominator
    if nm == "floor":
        return fl
    if nm == "ceil":
        return -((-c.numerator) // c.denominator)
    half = c - fl == Fraction(1, 2)
    if nm == "round_prefer_ceil":
        return fl + 1 if c - fl >= Fraction(1, 2) else fl
    return fl + 1 if c - fl > Fraction(1, 2) or (False and half) else fl  # round_prefer_floor


def expected(q, mode, ct, nm, F, xs, xz, ys, yz, lo, hi):
    """The integer semantics in exact rationals (NCHW codes), ties to even.
    x_scale / y_scale is taken exactly: the fabric's 31-bit multiplier of it
    differs only within 2^-31 of a rounding boundary, which no case below
    reaches."""
    N, C, H, W = q.shape
    ratio = Fraction(float(np.float32(xs))) / Fraction(float(np.float32(ys)))

    def taps(L, o, f):
        c = coord(ct, o, f)
        if mode == "nearest":
            return [(min(max(nearest(nm, c), 0), L - 1), Fraction(1))]
        i0 = c.numerator // c.denominator
        fr = c - i0
        return [(min(max(i0, 0), L - 1), 1 - fr), (min(max(i0 + 1, 0), L - 1), fr)]
    y = np.zeros((N, C, H * F[0], W * F[1]), np.int64)
    for oy in range(H * F[0]):
        ty = taps(H, oy, F[0])
        for ox in range(W * F[1]):
            tx = taps(W, ox, F[1])
            for n in range(N):
                for ch in range(C):
                    v = sum(wy * wx * (int(q[n, ch, iy, ix]) - xz) for iy, wy in ty for ix, wx in tx) * ratio
                    fl = v.numerator // v.denominator
                    r = fl + (1 if v - fl > Fraction(1, 2) or (v - fl == Fraction(1, 2) and fl % 2) else 0)
                    y[n, ch, oy, ox] = min(hi, max(lo, r + yz))
    return y


# name: (shape, mode, ct, nearest_mode, factors (H, W), given by sizes, x scale, y scale, u8)
FABRIC = {
    "linear_x2_half_pixel": ([1, 5, 6, 7], "linear", "half_pixel", None, (2, 2), False, 0.05, 0.05, False),
    "linear_x3_asymmetric_sizes": ([1, 3, 5, 4], "linear", "asymmetric", None, (3, 3), True, 0.04, 0.04, True),
    "linear_x8_pytorch": ([1, 4, 3, 5], "linear", "pytorch_half_pixel", None, (8, 8), False, 0.0625, 0.0625, False),
    "linear_w_only_rescaled": ([2, 6, 4, 6], "linear", "half_pixel", None, (1, 4), False, 0.03, 0.045, False),
    "linear_x2x4_half_pixel": ([1, 2, 4, 3], "linear", "half_pixel", None, (2, 4), True, 0.02, 0.02, True),
    "nearest_x2_asymmetric": ([1, 8, 5, 6], "nearest", "asymmetric", "floor", (2, 2), False, 0.05, 0.05, False),
    "nearest_x3_half_pixel": ([1, 3, 4, 5], "nearest", "half_pixel", "round_prefer_ceil", (3, 3), True, 0.05, 0.05,
                              True),
    "nearest_x4_tf": ([1, 2, 3, 3], "nearest", "tf_half_pixel_for_nn", "round_prefer_floor", (4, 2), False, 0.05, 0.05,
                      False),
    "nearest_x2_ceil": ([1, 4, 3, 4], "nearest", "half_pixel", "ceil", (2, 2), False, 0.05, 0.05, False),
}
# name: (shape, mode, ct, scales or sizes, by sizes, the reason's words)
HOST = {
    "linear_x1_5": ([1, 2, 4, 4], "linear", "half_pixel", [1, 2, 6, 6], True, "is not whole"),
    "linear_align_corners": ([1, 2, 4, 4], "linear", "align_corners", [1, 1, 2, 2], False, "align_corners"),
    "linear_x16_weights": ([1, 2, 2, 2], "linear", "half_pixel", [1, 1, 16, 16], False, "weight"),
    "nearest_x32": ([1, 2, 2, 2], "nearest", "asymmetric", [1, 1, 32, 32], False, "up to 16"),
}


CONFIG = "default"


def run(loom, backend, model, xp, out, *extra):
    p = subprocess.run([loom, "run", model, "--inputs", xp, "--outputs", out, "--backend", backend, "--config", CONFIG,
                        "--check", "--json", *extra], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def ort_codes(model, x, ys, yz):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    y = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    return np.rint(y / np.float32(ys)).astype(np.int64) + yz


def read_out(out):
    t = onnx.TensorProto()
    with open(os.path.join(out, "output_0.pb"), "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def edges_only(j):
    return [f for f in j["fallback_ops"] if not f.endswith("(QuantizeLinear)") and not f.endswith("(DequantizeLinear)")]


def fabric_case(loom, backend, d, name, spec, rng):
    shape, mode, ct, nm, F, by_sizes, xs, ys, u8 = spec
    out_shape = [shape[0], shape[1], shape[2] * F[0], shape[3] * F[1]]
    xz, yz = (128, 131) if u8 else (3, -2)
    lo, hi = (0, 255) if u8 else (-128, 127)
    model = os.path.join(d, name + ".onnx")
    model_of(model, shape, out_shape, mode, ct, nm, [1, 1, F[0], F[1]], out_shape if by_sizes else None, xs, xz, ys,
             yz, u8)
    q = rng.integers(lo, hi + 1, shape)
    x = ((q - xz) * np.float32(xs)).astype(np.float32)
    xp = os.path.join(d, name + "_x.pb")
    with open(xp, "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    out = os.path.join(d, name + "_out")
    j = run(loom, backend, model, xp, out)
    assert j["bit_exact"] is True, (name, j)
    assert edges_only(j) == [], (name, j["fallback_ops"], j["notes"])
    got = np.rint(read_out(out) / np.float32(ys)).astype(np.int64) + yz
    want = expected(q, mode, ct, nm, F, xs, xz, ys, yz, lo, hi)
    assert np.array_equal(got, want), (name, int((got != want).sum()), "codes differ from the integer semantics")
    diff = np.abs(got - ort_codes(model, x, ys, yz))
    assert diff.max() <= 1, (name, int(diff.max()))
    if mode == "linear":
        j = run(loom, backend, model, xp, out, "--exact-host")
        assert any(f.startswith("resize") for f in j["fallback_ops"]), (name, j["fallback_ops"])
        exact = np.rint(read_out(out) / np.float32(ys)).astype(np.int64) + yz
        assert np.array_equal(exact, ort_codes(model, x, ys, yz)), (name, "--exact-host differs from ONNX Runtime")
    return int((diff == 0).sum()), diff.size


def host_case(loom, backend, d, name, spec):
    shape, mode, ct, given, by_sizes, words = spec
    out_shape = given if by_sizes else [s * int(f) for s, f in zip(shape, given)]
    model = os.path.join(d, name + ".onnx")
    model_of(model, shape, out_shape, mode, ct, None, None if by_sizes else given, given if by_sizes else None, 0.05, 0,
             0.05, 0, False)
    xp = os.path.join(d, name + "_x.pb")
    with open(xp, "wb") as f:
        f.write(numpy_helper.from_array(np.linspace(-3, 3, int(np.prod(shape)), dtype=np.float32).reshape(shape),
                                        "x").SerializeToString())
    j = run(loom, backend, model, xp, os.path.join(d, name + "_out"))
    assert "resize (Resize)" in j["fallback_ops"], (name, j["fallback_ops"])
    # The reason: a host op's `why` (a group that did not fold), or a note
    # (an integer Resize the mapper refused).
    why = [h["why"] for h in j["host_ops"] if h["node"] == "resize"] + [n for n in j["notes"] if "resize" in n]
    assert any(words in w for w in why), (name, why)


def shape_chain_case(loom, backend, d):
    """Sizes computed from Shape -> Slice -> Concat, as torchvision's
    `interpolate(size=x.shape[-2:])` exports them, twice in a row with a
    conv between: the shapes ONNX's inference leaves unknown after the
    first Resize follow from the folded sizes, so the second Shape folds
    too and everything runs on the fabric."""
    rng = np.random.default_rng(5)

    def qdq(x, y, s):
        return [helper.make_node("QuantizeLinear", [x, s, "z"], [y + "_q"]),
                helper.make_node("DequantizeLinear", [y + "_q", s, "z"], [y])]
    w1 = rng.integers(-60, 60, (4, 2, 3, 3)).astype(np.int8)
    w2 = rng.integers(-60, 60, (3, 4, 1, 1)).astype(np.int8)
    inits = [numpy_helper.from_array(np.array(0.05, np.float32), "s"), numpy_helper.from_array(np.array(0, np.int8), "z"),
             numpy_helper.from_array(np.array(0.01, np.float32), "ws"), numpy_helper.from_array(w1, "w1"),
             numpy_helper.from_array(w2, "w2"), numpy_helper.from_array(np.array(0.1, np.float32), "s2"),
             numpy_helper.from_array(np.array([0], np.int64), "i0"), numpy_helper.from_array(np.array([2], np.int64), "i2"),
             numpy_helper.from_array(np.array([4], np.int64), "i4")]
    nodes = qdq("x", "xd", "s")
    nodes += [helper.make_node("DequantizeLinear", ["w1", "ws", "z"], ["w1d"]),
              helper.make_node("DequantizeLinear", ["w2", "ws", "z"], ["w2d"]),
              helper.make_node("Conv", ["xd", "w1d"], ["a"], strides=[2, 2], pads=[1, 1, 1, 1])]
    nodes += qdq("a", "ad", "s")
    for k, (src, like) in enumerate((("ad", "xd"), ("cd", "xd"))):
        nodes += [helper.make_node("Shape", [src], ["sh%d" % k]), helper.make_node("Shape", [like], ["big%d" % k]),
                  helper.make_node("Slice", ["sh%d" % k, "i0", "i2"], ["nc%d" % k]),
                  helper.make_node("Slice", ["big%d" % k, "i2", "i4"], ["hw%d" % k]),
                  helper.make_node("Concat", ["nc%d" % k, "hw%d" % k], ["sz%d" % k], axis=0),
                  helper.make_node("Resize", [src, "", "", "sz%d" % k], ["r%d" % k], mode="linear")]
        nodes += qdq("r%d" % k, "rd%d" % k, "s")
        if k == 0:
            nodes += [helper.make_node("Conv", ["rd0", "w2d"], ["c"], strides=[2, 2])]
            nodes += qdq("c", "cd_pre", "s2")
            nodes += [helper.make_node("DequantizeLinear", ["cd_pre_q", "s2", "z"], ["cd"])]
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8, 8])],
                          [helper.make_tensor_value_info("rd1", TensorProto.FLOAT, [1, 3, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = os.path.join(d, "shape_chain.onnx")
    onnx.save(m, model)
    x = rng.standard_normal((1, 2, 8, 8)).astype(np.float32)
    xp = os.path.join(d, "shape_chain_x.pb")
    with open(xp, "wb") as f:
        f.write(numpy_helper.from_array(x, "x").SerializeToString())
    out = os.path.join(d, "shape_chain_out")
    j = run(loom, backend, model, xp, out)
    assert j["bit_exact"] is True, j
    assert edges_only(j) == [], (j["fallback_ops"], [h["why"] for h in j["host_ops"]])
    assert len(j["segments"]) == 1, j["segments"]
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ref = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = read_out(out)
    assert got.shape == ref.shape == (1, 3, 8, 8), (got.shape, ref.shape)
    assert np.abs(np.rint(got / 0.05) - np.rint(ref / 0.05)).max() <= 1


def main():
    global CONFIG
    loom, backend = sys.argv[1], sys.argv[2]
    CONFIG = sys.argv[3] if len(sys.argv) > 3 else CONFIG
    rng = np.random.default_rng(11)
    same = total = 0
    with tempfile.TemporaryDirectory() as d:
        for name, spec in FABRIC.items():
            s, t = fabric_case(loom, backend, d, name, spec, rng)
            same, total = same + s, total + t
        for name, spec in HOST.items():
            host_case(loom, backend, d, name, spec)
        shape_chain_case(loom, backend, d)
    print("resize: %d fabric cases, %d host cases; %.2f %% of %d codes identical to ONNX Runtime, the rest within 1 LSB"
          % (len(FABRIC), len(HOST), 100.0 * same / total, total))


if __name__ == "__main__":
    main()
