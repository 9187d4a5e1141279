#!/usr/bin/env python3
"""Bad ONNX input through `loom run` / `loom compile`: each case builds a
broken model and requires one clear error line naming the file and the node
or field, a non-zero exit, no crash and no output written.

usage: bad_input_test.py LOOM CASE
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def qconv_model(x_zp_type=TensorProto.UINT8, w_scale_len=1, channels=2, opset=13, drop_w=False):
    """A QLinearConv with constant weights and quantization parameters."""
    w = numpy_helper.from_array(np.ones((channels, 1, 1, 1), np.uint8), "w")
    inits = [
        helper.make_tensor("xs", TensorProto.FLOAT, [], [0.5]),
        helper.make_tensor("xz", x_zp_type, [], [1]),
        helper.make_tensor("ws", TensorProto.FLOAT, [w_scale_len], [0.25] * w_scale_len),
        helper.make_tensor("wz", TensorProto.UINT8, [], [0]),
        helper.make_tensor("ys", TensorProto.FLOAT, [], [1.0]),
        helper.make_tensor("yz", TensorProto.UINT8, [], [3]),
    ]
    if not drop_w:
        inits.append(w)
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv")
    g = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, channels, 4, 4])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def relu_model(shape=(1, 4), opset=13, init=None):
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [init] if init else [])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return m


def save(m, path):
    with open(path, "wb") as f:
        f.write(m.SerializeToString())


# case -> (builder(dir) -> model path, substrings the error must contain)
def case_truncated(d):
    p = os.path.join(d, "trunc.onnx")
    b = qconv_model().SerializeToString()
    open(p, "wb").write(b[: len(b) // 2])
    return p, ["trunc.onnx"]


def case_not_protobuf(d):
    p = os.path.join(d, "text.onnx")
    open(p, "w").write("this is a text file, not a protobuf\n" * 4)
    return p, ["text.onnx"]


def external_model(path, fields):
    """An Add of graph input x and a 4-float initializer 'c' whose data is
    external, with the external_data (key, value) pairs `fields`."""
    t = helper.make_tensor("c", TensorProto.FLOAT, [4], [0.0] * 4)
    t.ClearField("float_data")
    t.data_location = TensorProto.EXTERNAL
    for k, v in fields:
        e = t.external_data.add()
        e.key, e.value = k, v
    g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"], name="add")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])], [t])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    save(m, path)
    return path


def case_external_data_escape(d):
    sub = os.path.join(d, "model")
    os.makedirs(sub)
    open(os.path.join(d, "secret.bin"), "wb").write(b"\0" * 16)
    p = external_model(os.path.join(sub, "ext.onnx"), [("location", "../secret.bin")])
    return p, ["ext.onnx", "initializer 'c'", "external_data", "leaves the model's folder"]


def case_dims_overflow(d):
    t = TensorProto()
    t.name, t.data_type = "big", TensorProto.FLOAT
    t.dims.extend([1 << 32, 1 << 32])
    t.raw_data = b"\0" * 8
    m = relu_model(init=t)
    p = os.path.join(d, "overflow.onnx")
    save(m, p)
    return p, ["overflow.onnx", "initializer 'big'", "dims", "overflows"]


def case_segmented_initializer(d):
    t = numpy_helper.from_array(np.ones((1, 4), np.float32), "part")
    t.segment.begin, t.segment.end = 0, 2  # one part of a tensor stored in several protos
    m = relu_model(init=t)
    p = os.path.join(d, "segmented.onnx")
    save(m, p)
    return p, ["segmented.onnx", "initializer 'part'", "field 'segment'", "not supported"]


def case_negative_dim(d):
    p = os.path.join(d, "neg.onnx")
    save(relu_model(shape=(1, -3)), p)
    return p, ["neg.onnx", "graph input 'x'", "shape", "-3"]


def case_zero_dim(d):
    p = os.path.join(d, "zero.onnx")
    save(relu_model(shape=(0, 4)), p)
    return p, ["zero.onnx", "graph input 'x'", "shape", "is 0"]


def case_cycle(d):
    g = helper.make_graph([helper.make_node("Add", ["x", "b"], ["a"], name="n1"),
                           helper.make_node("Relu", ["a"], ["b"], name="n2")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("b", TensorProto.FLOAT, [4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    p = os.path.join(d, "cycle.onnx")
    save(m, p)
    return p, ["cycle.onnx", "node 'n1'", "cycle"]


def case_output_listed_twice(d):
    # One node naming the same output twice (the loader once indexed past its
    # node list here: a crash found by fuzz_onnx).
    g = helper.make_graph([helper.make_node("Split", ["x"], ["y", "y"], name="split", axis=0)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    p = os.path.join(d, "twice.onnx")
    save(m, p)
    return p, ["twice.onnx", "node 'split'", "output 'y'", "listed twice among the node's outputs"]


def case_missing_initializer(d):
    p = os.path.join(d, "missing.onnx")
    save(qconv_model(drop_w=True), p)
    return p, ["missing.onnx", "node 'qconv'", "input 'w'", "missing initializer"]


def case_zero_point_dtype(d):
    p = os.path.join(d, "zptype.onnx")
    save(qconv_model(x_zp_type=TensorProto.INT8), p)
    return p, ["zptype.onnx", "qconv", "xz"]


def case_scale_length(d):
    p = os.path.join(d, "scalelen.onnx")
    save(qconv_model(w_scale_len=3, channels=2), p)
    return p, ["scalelen.onnx", "node 'qconv'", "input 'ws'", "3 values", "(2)"]


def case_opset_too_new(d):
    p = os.path.join(d, "opset22.onnx")
    save(relu_model(opset=22), p)
    return p, ["opset22.onnx", "opset_import", "opset 22", "10 to 21"]


def case_opset_too_old(d):
    p = os.path.join(d, "opset9.onnx")
    save(relu_model(opset=9), p)
    return p, ["opset9.onnx", "opset_import", "opset 9"]


def case_unsupported_op(d):
    g = helper.make_graph([helper.make_node("Einsum", ["x", "x"], ["y"], name="ein", equation="bi,bi->bi")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    p = os.path.join(d, "einsum.onnx")
    save(m, p)
    return p, ["einsum.onnx", "node 'ein'", "Einsum", "neither by the fabric nor by the host"]


def conv_model(**attrs):
    w = numpy_helper.from_array(np.ones((2, 1, 1, 1), np.float32), "w")
    g = helper.make_graph([helper.make_node("Conv", ["x", "w"], ["y"], name="conv", **attrs)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def case_zero_stride(d):
    # ONNX shape inference divides by the stride: checked before it runs.
    p = os.path.join(d, "stride0.onnx")
    save(conv_model(strides=[0, 1]), p)
    return p, ["stride0.onnx", "node 'conv'", "attribute 'strides'", "value 0"]


def case_auto_pad_unknown(d):
    p = os.path.join(d, "autopad.onnx")
    save(conv_model(auto_pad="EVIL"), p)
    return p, ["autopad.onnx", "node 'conv'", "attribute 'auto_pad'", "'EVIL'"]


def case_conv_bias_length(d):
    m = conv_model()
    m.graph.initializer.append(numpy_helper.from_array(np.ones(3, np.float32), "b"))
    m.graph.node[0].input.append("b")
    p = os.path.join(d, "bias3.onnx")
    save(m, p)
    return p, ["bias3.onnx", "node 'conv'", "input 'b'", "bias [3] for 2 output channels"]


def case_axis_beyond_any_rank(d):
    g = helper.make_graph([helper.make_node("Softmax", ["x"], ["y"], name="sm", axis=2**62)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    p = os.path.join(d, "axis.onnx")
    save(m, p)
    return p, ["axis.onnx", "node 'sm'", "attribute 'axis'", str(2**62)]


def case_zero_group(d):
    p = os.path.join(d, "group0.onnx")
    save(conv_model(group=0), p)
    return p, ["group0.onnx", "node 'conv'", "attribute 'group'"]


def scale_case(d, value, name):
    m = qconv_model()
    for t in m.graph.initializer:
        if t.name == "ws":
            t.ClearField("float_data")
            t.float_data.extend([value])
    p = os.path.join(d, name)
    save(m, p)
    return p, [name, "node 'qconv'", "input 'ws'", "finite and > 0"]


def case_zero_scale(d):
    return scale_case(d, 0.0, "zero_scale.onnx")


def case_negative_scale(d):
    return scale_case(d, -0.5, "negative_scale.onnx")


def case_nan_scale(d):
    return scale_case(d, float("nan"), "nan_scale.onnx")


def case_external_data_prefix_number(d):
    open(os.path.join(d, "w.bin"), "wb").write(b"\0" * 64)
    p = external_model(os.path.join(d, "ext_prefix.onnx"), [("location", "w.bin"), ("offset", "16abc")])
    return p, ["ext_prefix.onnx", "initializer 'c'", "'offset' must be a whole number", "16abc"]


def case_external_data_past_end(d):
    open(os.path.join(d, "w.bin"), "wb").write(b"\0" * 8)
    p = external_model(os.path.join(d, "ext_past_end.onnx"), [("location", "w.bin"), ("offset", "4"), ("length", "16")])
    return p, ["ext_past_end.onnx", "initializer 'c'", "beyond the end of the file"]


def case_conv_rank_mismatch(d):
    # A rank-3 input to a rank-4 kernel crashes ONNX's own shape inference
    # (convPoolShapeInference); loom runs it isolated and reports the crash.
    m = qconv_model()
    m.graph.input[0].type.tensor_type.shape.dim.pop()
    p = os.path.join(d, "rank3.onnx")
    save(m, p)
    return p, ["rank3.onnx", "ONNX checker and shape inference"]


CASES = {k[len("case_"):]: v for k, v in globals().items() if k.startswith("case_")}


def main():
    loom, case = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        model, needles = CASES[case](d)
        inp = os.path.join(d, "in.pb")
        open(inp, "wb").write(numpy_helper.from_array(np.zeros((1, 4), np.float32)).SerializeToString())
        out = os.path.join(d, "out")
        for cmd in ([loom, "run", model, "--inputs", inp, "--outputs", out],
                    [loom, "compile", model, "-o", os.path.join(d, "plan.bin")]):
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            err = p.stderr.strip()
            assert p.returncode not in (0,) and 0 < p.returncode < 128, "exit %d: %s" % (p.returncode, err)
            assert len(err.splitlines()) == 1, "expected one error line, got:\n" + err
            assert err.startswith("loom: error: "), err
            for n in needles:
                assert n in err, "'%s' missing from: %s" % (n, err)
            assert not os.path.exists(out) or not os.listdir(out), "outputs written despite the error"
            assert not os.path.exists(os.path.join(d, "plan.bin")), "plan written despite the error"
        print("ok:", err)


if __name__ == "__main__":
    main()
