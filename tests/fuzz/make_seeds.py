#!/usr/bin/env python3
"""Writes the generated seed corpora of the fuzz targets (docs/security.md):
small ONNX models built by hand (QDQ and QOperator forms, deterministic, no
ONNX Runtime), tensors in both formats, and plans and program plans compiled
by the `loom` binary from them and from the example graphs, so the binary
seeds always match the current formats.

usage: make_seeds.py LOOM_BINARY OUT_DIR
"""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "seed", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def scalar(name, dtype, v):
    return helper.make_tensor(name, dtype, [], [v])


def qdq(x, q, dq, s, z):
    return [helper.make_node("QuantizeLinear", [x, s, z], [q]), helper.make_node("DequantizeLinear", [q, s, z], [dq])]


def qdq_conv(groups=1, c=4, relu=True):
    rng = np.random.default_rng(1)
    w = rng.integers(-20, 20, (c, c // groups, 3, 3)).astype(np.int8)
    inits = [scalar("s", TensorProto.FLOAT, 0.05), scalar("z", TensorProto.INT8, 0),
             numpy_helper.from_array(w, "wq"), scalar("ws", TensorProto.FLOAT, 0.02),
             scalar("wz", TensorProto.INT8, 0), numpy_helper.from_array(np.zeros(c, np.float32), "b")]
    nodes = qdq("x", "xq", "xd", "s", "z")
    nodes += [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
              helper.make_node("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1], group=groups)]
    last = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        last = "r"
    nodes += qdq(last, "yq", "y", "s", "z")
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 6, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 6, 6])], inits)


def qdq_matmul_softmax():
    rng = np.random.default_rng(2)
    w = rng.integers(-20, 20, (8, 8)).astype(np.int8)
    inits = [scalar("s", TensorProto.FLOAT, 0.05), scalar("z", TensorProto.INT8, 0),
             numpy_helper.from_array(w, "wq"), scalar("ws", TensorProto.FLOAT, 0.02),
             scalar("wz", TensorProto.INT8, 0)]
    nodes = qdq("x", "xq", "xd", "s", "z")
    nodes += [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
              helper.make_node("MatMul", ["xd", "wd"], ["m"]),
              helper.make_node("Softmax", ["m"], ["sm"], axis=-1)]
    nodes += qdq("sm", "yq", "y", "s", "z")
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])], inits)


def qlinear_conv():
    inits = [scalar("xs", TensorProto.FLOAT, 0.5), scalar("xz", TensorProto.UINT8, 1),
             numpy_helper.from_array(np.ones((2, 1, 1, 1), np.uint8), "w"),
             helper.make_tensor("ws", TensorProto.FLOAT, [1], [0.25]), scalar("wz", TensorProto.UINT8, 0),
             scalar("ys", TensorProto.FLOAT, 1.0), scalar("yz", TensorProto.UINT8, 3)]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv")
    return model([node], [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 4, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 2, 4, 4])], inits)


def pool_add():
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Add", ["p", "a"], ["y"])]
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])], [])


def new_forms():
    """Opset 20, IR 10 (read through opset_adapt): Identity-fed weights, Gelu,
    Split with num_outputs, Concat, ReduceMean with an axes input."""
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("Identity", ["w"], ["w2"]), helper.make_node("MatMul", ["x", "w2"], ["h"]),
             helper.make_node("Gelu", ["h"], ["g"], approximate="tanh"),
             helper.make_node("Split", ["g"], ["a", "b"], axis=1, num_outputs=2),
             helper.make_node("Concat", ["b", "a"], ["c"], axis=1),
             helper.make_node("ReduceMean", ["c", "axes"], ["y"], keepdims=1)]
    g = helper.make_graph(nodes, "seed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])], [w, axes])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 10
    return m


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    loom, out = sys.argv[1], sys.argv[2]
    onnx_dir = os.path.join(out, "onnx")
    models = {"qdq_conv": qdq_conv(), "qdq_dwconv": qdq_conv(groups=4, relu=False),
              "qdq_matmul_softmax": qdq_matmul_softmax(), "qlinear_conv": qlinear_conv(), "pool_add": pool_add(),
              "new_forms_opset20": new_forms()}
    for name, m in models.items():
        write(os.path.join(onnx_dir, name + ".onnx"), m.SerializeToString())

    t = os.path.join(out, "tensor")
    rng = np.random.default_rng(3)
    for dt in (np.int8, np.uint8, np.int32, np.float32):
        a = (rng.standard_normal((2, 3)) * 10).astype(dt)
        write(os.path.join(t, f"{np.dtype(dt).name}.pb"), numpy_helper.from_array(a, "t").SerializeToString())
        os.makedirs(t, exist_ok=True)
        np.save(os.path.join(t, f"{np.dtype(dt).name}.npy"), a)

    def compile_(src, dst):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        r = subprocess.run([loom, "compile", src, "--config", "tiny", "-o", dst], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"make_seeds: loom compile {src} failed: {r.stderr.strip()}")

    compile_(os.path.join(ROOT, "examples", "demo_cnn.json"), os.path.join(out, "plan", "demo_cnn.plan"))
    for name in ("qdq_conv", "qdq_matmul_softmax", "pool_add"):
        compile_(os.path.join(onnx_dir, name + ".onnx"), os.path.join(out, "program_plan", name + ".plan"))
    print(f"make_seeds: wrote the seed corpora under {out}")


if __name__ == "__main__":
    main()
