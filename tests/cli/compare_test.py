#!/usr/bin/env python3
"""cli.compare.*: `loom compare MODEL.onnx` against ONNX Runtime, layer by
layer, on the small CNN of tests/onnx/qdq_test.py (conv, relu, max pool,
residual add, flatten, matmul; quantized by ONNX Runtime's quantize_static,
QDQ) and on the QOperator model of tests/onnx/program_plan_test.py (two
QLinearConvs around a host Softmax):

  - one row per quantized tensor, in node order, with the node before it;
  - identical rows where loom and ONNX Runtime must agree (the input's
    quantization, the first convolution, the max pool; every tensor of the
    QLinear model) and ORT's floor on them;
  - marking every quantized tensor as an output changes nothing: the final
    row agrees with `loom run` on the unmarked model;
  - --json validates against docs/schema/compare.schema.json;
  - --min-cosine above 1 exits 1 naming a layer in one line;
  - --local runs each quantized tensor's part of the graph alone on ONNX
    Runtime's codes of what it reads: the part is the op between the
    quantized tensors, and the ops loom and ONNX Runtime must agree on are
    identical alone;
  - --floor-cpu Nehalem adds ONNX Runtime on an SSE-only CPU (under qemu) as
    a second floor in every row;
  - every bad input is one line, a non-zero exit, nothing left behind.

Usage: compare_test.py LOOM ROOT [unittest args]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

LOOM = sys.argv[1]
ROOT = sys.argv[2]
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loom_compare_test_")
        # The command's scratch folder goes here, to see that none stays behind.
        self.tmp = os.path.join(self.dir, "tmp")
        os.mkdir(self.tmp)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def left_behind(self):
        # (onnxruntime itself leaves a file .ses in TMPDIR on import.)
        return [f for f in os.listdir(self.tmp) if f.startswith("loom_compare")]

    def loom(self, *args, env=None):
        e = dict(os.environ, TMPDIR=self.tmp, **(env or {}))
        return subprocess.run([LOOM, *[str(a) for a in args]], capture_output=True, text=True, timeout=300, env=e)

    def compare_json(self, *args):
        r = self.loom("compare", *args, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(self.left_behind(), [], "scratch files left behind")
        return json.loads(r.stdout)

    def cnn(self):
        """The QDQ CNN of qdq_test.py (int8 activations) and its input file."""
        import qdq_test

        q, _, xp = qdq_test.build(self.dir, "s8", "cnn")
        return q, xp

    def qlinear(self):
        from program_plan_test import two_segment_model

        m, _ = two_segment_model()
        p = self.path("two.onnx")
        with open(p, "wb") as f:
            f.write(m.SerializeToString())
        return p


class Layers(Base):
    def test_rows_json_and_marking(self):
        import jsonschema
        import numpy as np
        import onnx
        import onnxruntime as ort
        import ort_peer

        model, x = self.cnn()
        j = self.compare_json(model, "--inputs", x)
        with open(os.path.join(ROOT, "docs", "schema", "compare.schema.json")) as f:
            jsonschema.validate(j, json.load(f))
        self.assertEqual((j["schema_version"], j["result"], j["inputs"]), (1, "compare", {"files": [x]}))
        m = onnx.load(model)
        qs = [n for n in m.graph.node if n.op_type == "QuantizeLinear"]
        self.assertEqual([r["tensor"] for r in j["layers"]], [n.output[0] for n in qs])
        self.assertEqual([(r["node"], r["op"]) for r in j["layers"][:3]],
                         [("x", "graph input"), ("conv1", "Conv"), ("pool1", "MaxPool")])
        self.assertEqual([r["final"] for r in j["layers"]], [False] * (len(qs) - 1) + [True])
        # Where loom and ONNX Runtime must agree: the input's quantization,
        # one convolution, a max pool; ONNX Runtime agrees with itself there.
        for r in j["layers"][:3]:
            self.assertEqual((r["loom"]["identical"], r["loom"]["cosine"]), (1.0, 1.0), r)
            self.assertEqual(r["ort_floor"]["identical"], 1.0, r)
        # The residual Add rounds its exact sum once, as ONNX Runtime does
        # (docs/onnx.md): identical, and no layer drops.
        add = next(r for r in j["layers"] if r["op"] == "Add")
        self.assertEqual(add["loom"]["identical"], 1.0, add)
        self.assertIsNone(j["first_drop"])
        self.assertEqual((j["min_cosine"], j["below_min_cosine"]), (None, []))
        # Marking every quantized tensor as an output changes nothing: the
        # final row agrees with `loom run` on the model as given, compared
        # here with ONNX Runtime directly.
        out = self.path("out")
        r = self.loom("run", model, "--backend", "ref", "--inputs", x, "--outputs", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        scale, zp = ort_peer.output_quant(m, m.graph.output[0].name)
        want = ort_peer.ort_run(model, {"x": ort_peer.load_pb(x)}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
        got = ort_peer.load_pb(os.path.join(out, "output_0.pb"))
        c = ort_peer.compare(ort_peer.to_q(got, scale, zp), ort_peer.to_q(want, scale, zp), zp)
        self.assertEqual(c["differ"], j["layers"][-1]["loom"]["differ"])
        self.assertTrue(np.isclose(c["cosine"], j["layers"][-1]["loom"]["cosine"], rtol=0, atol=1e-12))

    def test_text_and_min_cosine(self):
        model, x = self.cnn()
        r = self.loom("compare", model, "--inputs", x, "--layers", "--min-cosine", "1.01")
        self.assertEqual(r.returncode, 1, r.stderr)
        errors = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(len(errors), 1, r.stderr)
        self.assertTrue(errors[0].startswith("loom: error: compare: layer #0 x_QuantizeLinear_Output"), errors[0])
        self.assertIn("--min-cosine 1.01", errors[0])
        lines = r.stdout.splitlines()
        rows = [l for l in lines if l.split()[0].isdigit()]
        self.assertEqual(len(rows), 8, r.stdout)
        self.assertIn("conv1 (Conv)", rows[1])
        self.assertTrue(lines[-1].startswith("first layer below the threshold (cosine < 1.01"), r.stdout)
        # With --json the document is still printed, naming every layer below.
        r = self.loom("compare", model, "--inputs", x, "--min-cosine", "1.01", "--json")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(json.loads(r.stdout)["below_min_cosine"], list(range(8)))
        # Without --layers: the summary alone, the table's tail.
        short = self.loom("compare", model, "--inputs", x, "--min-cosine", "0.99")
        self.assertEqual(short.returncode, 0, short.stderr)
        summary = short.stdout.splitlines()
        self.assertEqual(summary[:-1], lines[len(rows) + 1:-1])
        self.assertTrue(summary[-1].startswith("first layer below the threshold (cosine < 0.99") and
                        summary[-1].endswith(": none"), short.stdout)

    def test_qlinear_model_and_seeds(self):
        model = self.qlinear()
        j = self.compare_json(model, "--seed", "3")
        self.assertEqual([(r["tensor"], r["op"]) for r in j["layers"]],
                         [("xq", "graph input"), ("c1", "QLinearConv"), ("sq", "Softmax"), ("c2", "QLinearConv")])
        self.assertEqual(j["inputs"], {"seed": 3})
        for r in j["layers"]:
            self.assertEqual(r["loom"]["identical"], 1.0, r)
        self.assertIsNone(j["first_drop"])


class Local(Base):
    def constant_add(self):
        """x -> Q -> DQ, plus a quantized Constant 1.0 (Constant -> Q -> DQ), -> Q."""
        import onnx
        from onnx import TensorProto, helper

        def q(name, src, scale, zp):
            return [helper.make_node("QuantizeLinear", [src, scale, zp], [name + "_q"]),
                    helper.make_node("DequantizeLinear", [name + "_q", scale, zp], [name + "_dq"])]

        inits = [helper.make_tensor("s", TensorProto.FLOAT, [], [0.05]),
                 helper.make_tensor("s2", TensorProto.FLOAT, [], [0.03]),
                 helper.make_tensor("z", TensorProto.INT8, [], [3])]
        nodes = [helper.make_node("Constant", [], ["one"], value=helper.make_tensor("v", TensorProto.FLOAT, [], [1.0]))]
        nodes += q("x", "x", "s", "z") + q("one", "one", "s", "z")
        nodes += [helper.make_node("Add", ["x_dq", "one_dq"], ["sum"]),
                  helper.make_node("QuantizeLinear", ["sum", "s2", "z"], ["y_q"]),
                  helper.make_node("DequantizeLinear", ["y_q", "s2", "z"], ["y"])]
        g = helper.make_graph(nodes, "c", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        p = self.path("const_add.onnx")
        onnx.save(m, p)
        return p

    def test_each_layer_alone(self):
        import jsonschema
        import onnx

        import compare
        import compare_local

        model, x = self.cnn()
        j = self.compare_json(model, "--inputs", x, "--local")
        with open(os.path.join(ROOT, "docs", "schema", "compare.schema.json")) as f:
            jsonschema.validate(j, json.load(f))
        self.assertTrue(j["local"])
        # The part of each tensor: the nodes between it and the quantized
        # tensors it reads. The residual Add's reads its two operands' codes.
        m = onnx.load(model)
        layers = compare.quantized_layers(m)
        found = compare_local.parts(m, compare.topological(m, list(m.graph.node)), {l.tensor for l in layers})
        add = next(l for l in layers if l.op == "Add")
        places, bound = found[add.tensor]
        ops = sorted(m.graph.node[k].op_type for k in places)
        self.assertEqual(len(bound), 2, bound)
        self.assertTrue(all(b in found for b in bound), bound)
        self.assertEqual(ops.count("Add"), 1, ops)
        self.assertEqual(ops.count("DequantizeLinear"), 2, ops)
        self.assertNotIn("Conv", ops)
        self.assertEqual(found[layers[0].tensor][1], ["x"])  # the graph input's quantization reads the input
        rows = {r["tensor"]: r for r in j["layers"]}
        for r in j["layers"]:
            self.assertNotIn("error", r["local"], r)
            self.assertEqual((r["local"]["elements"], r["local"]["inputs"]),
                             (r["elements"], len(found[r["tensor"]][1])))
        for r in j["layers"][:3] + [rows[add.tensor]]:
            self.assertEqual(r["local"]["differ"], 0, r)
        # Without it the rows say nothing of it; the text names it.
        self.assertTrue(all(r["local"] is None for r in self.compare_json(model, "--inputs", x)["layers"]))
        r = self.loom("compare", model, "--inputs", x, "--local", "--layers")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("alone: identical", r.stdout.splitlines()[0])
        self.assertIn("each layer alone on ONNX Runtime's codes of what it reads (--local): ", r.stdout)
        # A quantized constant's part reads nothing: it runs without inputs.
        j = self.compare_json(self.constant_add(), "--seed", "2", "--local")
        self.assertEqual([(r["op"], r["local"].get("inputs")) for r in j["layers"]],
                         [("graph input", 1), ("Constant", 0), ("Add", 2)])
        # A QLinear op alone reads its one quantized input.
        j = self.compare_json(self.qlinear(), "--seed", "3", "--local")
        for r in j["layers"]:
            self.assertEqual(r["local"]["differ"], 0, r)
        self.assertEqual([r["local"]["inputs"] for r in j["layers"]], [1, 1, 1, 1])


class FloorCpu(Base):
    def test_other_cpu_floor(self):
        """--floor-cpu Nehalem: ONNX Runtime at ORT_DISABLE_ALL under qemu on an
        SSE-only CPU, a second floor in every row."""
        import jsonschema

        model, x = self.cnn()
        j = self.compare_json(model, "--inputs", x, "--floor-cpu", "Nehalem")
        with open(os.path.join(ROOT, "docs", "schema", "compare.schema.json")) as f:
            jsonschema.validate(j, json.load(f))
        self.assertEqual(j["floor_cpu"], {"cpu": "Nehalem", "cpu_class": "SSE without VNNI"})
        for r in j["layers"]:
            c = r["ort_cpu_floor"]
            self.assertEqual(c["elements"], r["elements"], r)
            self.assertTrue(0.0 <= c["identical"] <= c["within_1"] <= 1.0, r)
        # The graph input is quantized the same on every CPU.
        self.assertEqual(j["layers"][0]["ort_cpu_floor"]["identical"], 1.0)
        # Without it, the fields say so.
        j = self.compare_json(model, "--inputs", x)
        self.assertIsNone(j["floor_cpu"])
        self.assertTrue(all(r["ort_cpu_floor"] is None for r in j["layers"]))


class BadInput(Base):
    def bad(self, args, needle, env=None):
        r = self.loom("compare", *args, env=env)
        self.assertNotEqual(r.returncode, 0, r.stdout)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, "expected one error line: %r" % r.stderr)
        self.assertTrue(lines[0].startswith("loom: error:"), lines[0])
        self.assertIn(needle, lines[0])
        self.assertEqual(r.stdout, "")
        self.assertEqual(self.left_behind(), [], "scratch files left behind")

    def test_bad_inputs_are_one_line(self):
        import onnx
        from onnx import TensorProto, helper

        model = self.qlinear()
        junk = self.path("junk.onnx")
        with open(junk, "w") as f:
            f.write("not a model\n")
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "f",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        plain = self.path("float.onnx")
        onnx.save(m, plain)
        self.bad([self.path("missing.onnx")], "no such file")
        self.bad([self.dir], "is a folder")
        self.bad([junk], "not a valid ONNX model")
        self.bad([plain], "nothing to compare")
        self.bad([model, "--seed", "-1"], "--seed")
        self.bad([model, "--min-cosine", "nan"], "--min-cosine")
        self.bad([model, "--min-cosine", "high"], "--min-cosine")
        self.bad([model, "--against", "tensorrt"], "--against")
        self.bad([model, "--floor-cpu", "Nehalem;rm"], "--floor-cpu")
        self.bad([model, "--floor-cpu", "-cpu"], "--floor-cpu")
        self.bad([model, "--floor-cpu", "NoSuchCpu"], "ONNX Runtime under qemu-x86_64 -cpu NoSuchCpu failed")
        self.bad([model, "--inputs", self.path("x.pb")], "x.pb")
        self.bad([model, "--inputs", junk, junk], "2 files given")
        self.bad([model], "cannot run '/nonexistent/python3'", env={"LOOM_PYTHON": "/nonexistent/python3"})
        fake = self.path("python_without_packages")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nexec %s -S -I \"$@\"\n" % sys.executable)
        os.chmod(fake, 0o755)
        self.bad([model], "lacks numpy, onnx or onnxruntime", env={"LOOM_PYTHON": fake})


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
