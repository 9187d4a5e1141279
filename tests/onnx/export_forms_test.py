#!/usr/bin/env python3
"""Models as current exporters write them (scripts/export_forms.py), through
`loom run MODEL --check --json` on a backend:
  - IR version 10 at opsets 18-21 are read (in their opset-17 form);
  - a Conv whose bias reaches it through an Identity node folds onto the
    fabric (the Identity is bypassed at import, and the notes say so);
  - Constant -> QuantizeLinear -> DequantizeLinear is a constant (GELU's
    1.0 and 0.5), and opset-20 Gelu nodes (both forms) fold into table
    lookups: those models run whole on the fabric, only the graph-edge
    QuantizeLinear/DequantizeLinear on the host;
  - every host op is named with a reason (`host_ops` in --json);
  - the conv nets' Split, Concat, AveragePool, ReduceMean, sigmoid gate,
    broadcast Mul and bilinear Resize run on the fabric;
  - every device segment is bit-exact with loom's direct reference, and the
    output agrees with ONNX Runtime within four output steps (requantized
    several times over) and a cosine similarity of 0.999.
Then forms loom refuses, each one line naming the node: a Gelu with an
unknown `approximate`, a ReduceMean (opset 18) whose axes are not constant.

usage: export_forms_test.py LOOM BACKEND
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import export_forms  # noqa: E402

# Forms that must run whole on the fabric between their first Q and last DQ
# (the ops listed are allowed on the host as well).
WHOLE = {"conv_bias_identity_qdq": (), "gelu_opset20": (), "gelu_constants_qdq": (), "conv_opset18": (),
         "conv_opset19": (), "conv_opset20": (), "conv_opset21": (), "encoder_dynamic": (), "cnn_dynamic": (),
         "unflatten_qkv": ()}
# Output steps of tolerance against ONNX Runtime: 4, and for Softmax and
# LayerNormalization, which run as integer row normalizations (ROWNORM,
# docs/onnx.md), 12.
ATOL_STEPS = {"encoder_dynamic": 12}
NOTES = {"conv_bias_identity_qdq": "Identity node", "gelu_constants_qdq": "constant folding"}
# Forms whose output codes must equal ONNX Runtime's on at least this share of
# elements: GELU with its constants quantized as activations is one table
# lookup computed as ONNX Runtime computes the chain (float32, each
# QuantizeLinear rounding half to even); its `1 + erf` falls on a half for
# every input when erf's scale is the output's.
IDENTICAL = {"gelu_constants_qdq": 0.999}


def out_step(model_path):
    """Scale of the QuantizeLinear before the output DequantizeLinear (one output step)."""
    m = onnx.load(model_path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] == out:
            return float(inits[n.input[1]])
    return 0.0


def run_form(loom, backend, d, name):
    path = os.path.join(d, name + ".onnx")
    data = os.path.join(d, name, "test_data_set_0")
    step = out_step(path)
    outs = os.path.join(d, name + "_out")
    cmd = [loom, "run", path, "--backend", backend, "--config", "tiny", "--check", "--json", "--outputs", outs,
           "--inputs", os.path.join(data, "input_0.pb"), "--expected", data, "--atol", str(ATOL_STEPS.get(name, 4) * step + 1e-5)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        sys.exit("%s: loom failed (%d): %s\n%s" % (name, r.returncode, r.stderr.strip(), " ".join(cmd)))
    j = json.loads(r.stdout)
    if j["segments"]:
        assert j["bit_exact"] is True, (name, "not bit-exact")
    else:  # a float form runs on the host: --check has nothing to compare and claims nothing
        assert j["bit_exact"] is None and j["checked_segments"] == 0, (name, j["bit_exact"])
    assert j["expected"]["within_tolerance"], (name, j["expected"])
    assert j["expected"]["outputs"][0]["cosine_similarity"] >= 0.999, (name, j["expected"])
    hosts = j["host_ops"]
    assert len(hosts) == j["fallback_op_count"], (name, "host_ops and fallback_ops disagree")
    for h in hosts:
        assert h["why"], (name, h, "a host op without a reason")
    if name in WHOLE:
        inner = [h for h in hosts if h["op"] not in ("QuantizeLinear", "DequantizeLinear")]
        assert len(j["segments"]) == 1 + len(inner), (name, j["segments"], inner)
        assert all(h["op"] in WHOLE[name] for h in inner), (name, inner)
    if name in NOTES:
        assert any(NOTES[name] in n for n in j["notes"]), (name, j["notes"])
    if name in IDENTICAL:
        got = numpy_helper.to_array(onnx.load_tensor(os.path.join(outs, "output_0.pb")))
        want = numpy_helper.to_array(onnx.load_tensor(os.path.join(data, "output_0.pb")))
        same = float(np.mean(np.abs(got - want) < step / 2))
        assert same >= IDENTICAL[name], (name, "%.3f %% of output codes identical to ONNX Runtime" % (100 * same))
    print("%s: %d segments, %d host ops, %s, max |diff| %.4g (step %.4g)" %
          (name, len(j["segments"]), len(hosts), "bit-exact" if j["segments"] else "nothing on the device",
           j["expected"]["outputs"][0]["max_abs_diff"], step))


def refuse(loom, d, name, model, words):
    path = os.path.join(d, name + ".onnx")
    onnx.save(model, path)
    r = subprocess.run([loom, "compile", path, "-o", os.path.join(d, name + ".plan")], capture_output=True, text=True,
                       timeout=120)
    lines = r.stderr.strip().splitlines()
    assert r.returncode != 0 and len(lines) == 1, (name, r.returncode, r.stderr)
    for w in words:
        assert w in lines[0], (name, w, lines[0])
    assert not os.path.exists(os.path.join(d, name + ".plan")), name
    print("%s: refused: %s" % (name, lines[0]))


def bad_models():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 2, 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 2, 2])
    g = helper.make_graph([helper.make_node("Gelu", ["x"], ["y"], name="gelu", approximate="fast")], "g", [x], [y])
    gelu = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    gelu.ir_version = 10
    y2 = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 1, 1])
    ax = helper.make_tensor_value_info("axes", TensorProto.INT64, [2])
    g = helper.make_graph([helper.make_node("ReduceMean", ["x", "axes"], ["y"], name="mean")], "g", [x, ax], [y2])
    mean = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    mean.ir_version = 10
    return [("gelu_fast", gelu, ["'gelu'", "approximate 'fast'"]),
            ("mean_axes_input", mean, ["'mean'", "ReduceMean", "'axes' is not a constant"])]


def main():
    loom, backend = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        export_forms.build(d, 1)
        for f in json.load(open(os.path.join(d, "forms.json")))["models"]:
            run_form(loom, backend, d, f["name"])
        for name, model, words in bad_models():
            refuse(loom, d, name, model, words)


if __name__ == "__main__":
    main()
