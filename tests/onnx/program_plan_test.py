#!/usr/bin/env python3
"""Program files with host steps (docs/plan-format.md, format version 3): an
ONNX model with two device segments and host ops between them, through `loom
compile` and `loom run PLAN`, and broken program files.

A QOperator model (uint8 input quantization, NCHW convolutions, so both
boundary conversions run): Q -> QLinearConv (segment 0) -> DQ -> Softmax -> Q
-> QLinearConv (segment 1) -> DQ (a softmax over channels: a row reduction,
which stays on the host; an elementwise op would fold into a table lookup). Each broken plan is re-sealed with a valid
checksum where the case is about the contents, so the reader's own checks
are what refuses it.

usage: program_plan_test.py LOOM BACKEND [unittest args]
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

LOOM = BACKEND = None
HEADER = 40


def two_segment_model():
    rng = np.random.default_rng(5)
    w1 = rng.integers(-60, 60, (8, 3, 3, 3)).astype(np.int8)
    w2 = rng.integers(-60, 60, (4, 8, 1, 1)).astype(np.int8)
    b1 = rng.integers(-500, 500, 8).astype(np.int32)
    f = lambda n, v: helper.make_tensor(n, TensorProto.FLOAT, [], [v])
    inits = [
        f("xs", 0.02), helper.make_tensor("xz", TensorProto.UINT8, [], [128]),
        numpy_helper.from_array(w1, "w1"), helper.make_tensor("ws1", TensorProto.FLOAT, [8], list(rng.uniform(0.002, 0.004, 8))),
        helper.make_tensor("wz1", TensorProto.INT8, [8], [0] * 8), numpy_helper.from_array(b1, "b1"),
        f("ys1", 0.05), helper.make_tensor("yz1", TensorProto.UINT8, [], [120]),
        f("hs", 0.004), helper.make_tensor("hz", TensorProto.INT8, [], [-128]),
        numpy_helper.from_array(w2, "w2"), helper.make_tensor("ws2", TensorProto.FLOAT, [], [0.01]),
        helper.make_tensor("wz2", TensorProto.INT8, [], [0]),
        f("ys2", 0.03), helper.make_tensor("yz2", TensorProto.INT8, [], [3]),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["xq"], name="quant_x"),
        helper.make_node("QLinearConv", ["xq", "xs", "xz", "w1", "ws1", "wz1", "ys1", "yz1", "b1"], ["c1"],
                         name="conv1", pads=[1, 1, 1, 1]),
        helper.make_node("DequantizeLinear", ["c1", "ys1", "yz1"], ["c1f"], name="deq_c1"),
        helper.make_node("Softmax", ["c1f"], ["sf"], name="softmax", axis=1),
        helper.make_node("QuantizeLinear", ["sf", "hs", "hz"], ["sq"], name="quant_s"),
        helper.make_node("QLinearConv", ["sq", "hs", "hz", "w2", "ws2", "wz2", "ys2", "yz2"], ["c2"], name="conv2"),
        helper.make_node("DequantizeLinear", ["c2", "ys2", "yz2"], ["y"], name="deq_y"),
    ]
    g = helper.make_graph(nodes, "two_segments", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 6, 6])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.checker.check_model(m, full_check=True)
    x = rng.standard_normal((1, 3, 6, 6)).astype(np.float32)
    return m, x


def write(path, b):
    with open(path, "wb") as f:
        f.write(b)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def fnv1a64(b):
    h = 0xcbf29ce484222325
    for c in b:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def split(path):
    b = read(path)
    magic, ver, flags, ml, pl, cs = struct.unpack("<8sIIQQQ", b[:HEADER])
    return ver, json.loads(b[HEADER:HEADER + ml]), b[HEADER + ml:]


def seal(path, ver, meta, payload):
    m = json.dumps(meta).encode()
    body = m + payload
    write(path, struct.pack("<8sIIQQQ", b"LOOMPLAN", ver, 0, len(m), len(payload), fnv1a64(body)) + body)


class ProgramPlan(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loom_progplan_")
        self.model = os.path.join(self.dir, "two.onnx")
        m, x = two_segment_model()
        write(self.model, m.SerializeToString())
        self.x = os.path.join(self.dir, "x.pb")
        write(self.x, numpy_helper.from_array(x, "x").SerializeToString())
        self.plan = os.path.join(self.dir, "two.plan")
        r = self.loom("compile", self.model, "--config", "tiny", "-o", self.plan, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.compiled = json.loads(r.stdout)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def loom(self, *args):
        return subprocess.run([LOOM] + list(args), capture_output=True, text=True, timeout=300)

    def run_plan(self, plan, *extra, out="out"):
        return self.loom("run", plan, "--backend", BACKEND, "--inputs", self.x, "--outputs",
                         os.path.join(self.dir, out), *extra)

    def assert_one_line_error(self, r, *needles, out="out"):
        err = r.stderr.strip()
        self.assertTrue(0 < r.returncode < 128, "exit %d: %s" % (r.returncode, err))
        self.assertEqual(len(err.splitlines()), 1, "expected one error line, got:\n" + err)
        self.assertTrue(err.startswith("loom: error: "), err)
        for n in needles:
            self.assertIn(n, err)
        o = os.path.join(self.dir, out)
        self.assertFalse(os.path.exists(o) and os.listdir(o), "outputs written despite the error")

    # -- the good path ------------------------------------------------------

    def test_runs_like_the_model(self):
        c = self.compiled
        self.assertEqual(len(c["segments"]), 2, c)
        self.assertEqual(c["format_version"], 3)
        self.assertEqual(sorted(f.split(" ")[0] for f in c["fallback_ops"]), ["deq_c1", "deq_y", "quant_s", "quant_x", "softmax"])
        ver, meta, _ = split(self.plan)
        self.assertEqual(ver, 3)
        self.assertEqual(meta["kind"], "program")
        self.assertEqual(meta["host"]["codec"], "onnx")
        self.assertEqual(meta["graph_source"], self.model)
        r = self.run_plan(self.plan, "--check", "--json", out="from_plan")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertIs(j["bit_exact"], True)
        self.assertEqual(j["kind"], "onnx_plan")
        self.assertEqual([s["nodes"] for s in j["segments"]], [["conv1"], ["conv2"]])
        self.assertEqual(j["fallback_ops"], c["fallback_ops"])
        r2 = self.loom("run", self.model, "--config", "tiny", "--backend", BACKEND, "--inputs", self.x, "--outputs",
                       os.path.join(self.dir, "from_onnx"), "--json")
        self.assertEqual(r2.returncode, 0, r2.stderr)
        j2 = json.loads(r2.stdout)
        a = read(os.path.join(self.dir, "from_plan", "output_0.pb"))
        b = read(os.path.join(self.dir, "from_onnx", "output_0.pb"))
        self.assertEqual(a, b, "the plan and the .onnx give different outputs")
        self.assertEqual(j["instructions"], j2["instructions"])
        y = numpy_helper.to_array(onnx.load_tensor_from_string(a))
        self.assertEqual(y.shape, (1, 4, 6, 6))
        self.assertGreater(len(np.unique(y)), 4, "degenerate output")

    def test_symbolic_batch_is_bound_from_the_inputs_or_refused(self):
        # A symbolic batch dimension is bound to the --inputs' shape and runs
        # on the device as the fixed model does; with nothing to bind it from
        # the model is refused in one line naming the dimension, never run
        # wholly on the host.
        m, _ = two_segment_model()
        m.graph.input[0].type.tensor_type.shape.dim[0].dim_param = "N"
        sym = os.path.join(self.dir, "sym.onnx")
        write(sym, m.SerializeToString())
        r = self.loom("run", sym, "--config", "tiny", "--backend", BACKEND, "--inputs", self.x, "--check", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual([s["nodes"] for s in j["segments"]], [["conv1"], ["conv2"]])
        self.assertTrue(j["bit_exact"])
        for cmd in (["run", sym], ["compile", sym, "-o", os.path.join(self.dir, "sym.plan")]):
            r = self.loom(*cmd, "--config", "tiny")
            self.assertEqual(r.returncode, 1)
            self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
            self.assertIn("input 'x' dimension 0 ('N')", r.stderr)
            self.assertIn("--dim SYMBOL=N", r.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "sym.plan")))
        r = self.loom("compile", sym, "--config", "tiny", "--dim", "N=1", "-o", os.path.join(self.dir, "sym.plan"))
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_check_with_nothing_on_the_device_claims_nothing(self):
        # A float model (nothing quantized) keeps nothing on the device:
        # --check has nothing to compare and says so, instead of "bit-exact".
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 6, 6])
        g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "float_only", [x], [y])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        sym = os.path.join(self.dir, "float_only.onnx")
        write(sym, m.SerializeToString())
        r = self.loom("run", sym, "--config", "tiny", "--backend", BACKEND, "--inputs", self.x, "--check", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["segments"], [])
        self.assertIsNone(j["bit_exact"])
        self.assertEqual(j["checked_segments"], 0)
        r = self.loom("run", sym, "--config", "tiny", "--backend", BACKEND, "--inputs", self.x, "--check")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("check: nothing ran on the device (0 device segments", r.stdout)
        self.assertNotIn("bit-exact", r.stdout)

    def test_runs_without_the_model(self):
        os.rename(self.model, self.model + ".moved")
        r = self.run_plan(self.plan, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_host_steps_are_plain_onnx(self):
        # The payload starts with the host steps as an ONNX model any ONNX tool reads.
        _, meta, payload = split(self.plan)
        hm = onnx.load_from_string(payload[:meta["host"]["bytes"]])
        self.assertEqual([n.name for n in hm.graph.node], ["quant_x", "deq_c1", "softmax", "quant_s", "deq_y"])
        self.assertEqual([i.name for i in hm.graph.input], ["x"])
        self.assertEqual([o.name for o in hm.graph.output], ["y"])
        self.assertIn("hs", [t.name for t in hm.graph.initializer])
        self.assertNotIn("w1", [t.name for t in hm.graph.initializer], "segment weights belong in the segment plan")
        self.assertEqual(meta["steps"], [{"host": 0}, {"segment": 0}, {"host": 1}, {"host": 2}, {"host": 3},
                                         {"segment": 1}, {"host": 4}])

    # -- broken plans ---------------------------------------------------------

    def test_truncated(self):
        full = read(self.plan)
        bad = os.path.join(self.dir, "trunc.plan")
        for n in (HEADER + 3, len(full) // 2, len(full) - 1):
            write(bad, full[:n])
            self.assert_one_line_error(self.run_plan(bad), "trunc.plan")

    def test_corrupted(self):
        b = bytearray(read(self.plan))
        b[len(b) // 2] ^= 0x20
        bad = os.path.join(self.dir, "corrupt.plan")
        write(bad, bytes(b))
        self.assert_one_line_error(self.run_plan(bad), "corrupt.plan", "checksum")

    def test_corrupted_segment_plan(self):
        # A segment's own container is checked too, even under a valid outer checksum.
        ver, meta, payload = split(self.plan)
        p = bytearray(payload)
        at = meta["host"]["bytes"] + meta["segments"][0]["plan_bytes"] - 5
        p[at] ^= 0x01
        bad = os.path.join(self.dir, "seg.plan")
        seal(bad, ver, meta, bytes(p))
        self.assert_one_line_error(self.run_plan(bad), "seg.plan", "segments[0]", "checksum")

    def test_unknown_host_op(self):
        ver, meta, payload = split(self.plan)
        n = meta["host"]["bytes"]
        hm = onnx.load_from_string(payload[:n])
        hm.graph.node[2].op_type = "Softmaxal"
        h = hm.SerializeToString()
        meta["host"]["bytes"] = len(h)
        bad = os.path.join(self.dir, "op.plan")
        seal(bad, ver, meta, h + payload[n:])
        self.assert_one_line_error(self.run_plan(bad), "op.plan", "host_model", "'softmax'", "Softmaxal", "op_type")

    def test_constant_dims_beyond_its_data(self):
        ver, meta, payload = split(self.plan)
        n = meta["host"]["bytes"]
        hm = onnx.load_from_string(payload[:n])
        t = [t for t in hm.graph.initializer if t.name == "hs"][0]
        t.dims.extend([4096, 32])  # within the element limit, beyond the data
        h = hm.SerializeToString()
        meta["host"]["bytes"] = len(h)
        bad = os.path.join(self.dir, "dims.plan")
        seal(bad, ver, meta, h + payload[n:])
        self.assert_one_line_error(self.run_plan(bad), "dims.plan", "initializer 'hs'", "raw_data")
        t.dims.extend([65536, 32768])  # above the element limit: refused before its data is looked at
        h = hm.SerializeToString()
        meta["host"]["bytes"] = len(h)
        seal(bad, ver, meta, h + payload[n:])
        self.assert_one_line_error(self.run_plan(bad), "dims.plan", "initializer 'hs'", "exceeds the limit")

    def test_segment_index_out_of_range(self):
        ver, meta, payload = split(self.plan)
        meta["steps"][5] = {"segment": 7}
        bad = os.path.join(self.dir, "idx.plan")
        seal(bad, ver, meta, payload)
        self.assert_one_line_error(self.run_plan(bad), "idx.plan", "steps[5]", "field 'segment'", "out of range")

    def test_step_order_broken(self):
        # Segment 1 before the host step that produces its input.
        ver, meta, payload = split(self.plan)
        s = meta["steps"]
        s[4], s[5] = s[5], s[4]
        bad = os.path.join(self.dir, "order.plan")
        seal(bad, ver, meta, payload)
        self.assert_one_line_error(self.run_plan(bad), "order.plan", "steps[4]", "segment 1 reads 'sq'")

    def test_missing_field(self):
        ver, meta, payload = split(self.plan)
        del meta["segments"][1]["inputs"]
        bad = os.path.join(self.dir, "field.plan")
        seal(bad, ver, meta, payload)
        self.assert_one_line_error(self.run_plan(bad), "field.plan", "segments[1]", "'inputs'")

    def test_plan_bytes_past_the_end(self):
        ver, meta, payload = split(self.plan)
        meta["segments"][1]["plan_bytes"] += 1000
        bad = os.path.join(self.dir, "len.plan")
        seal(bad, ver, meta, payload)
        self.assert_one_line_error(self.run_plan(bad), "len.plan", "segments[1]", "plan_bytes")

    def test_check_without_the_model(self):
        os.rename(self.model, self.model + ".moved")
        self.assert_one_line_error(self.run_plan(self.plan, "--check"), "--check", self.model, "missing or changed")

    def test_check_with_a_changed_model(self):
        with open(self.model, "ab") as f:
            f.write(b"\0")
        self.assert_one_line_error(self.run_plan(self.plan, "--check"), "--check", self.model, "missing or changed")

    def test_other_config(self):
        self.assert_one_line_error(self.run_plan(self.plan, "--config", "small"), "--config", "'tiny'")

    def test_output_not_a_regular_file(self):
        # A directory (or a device such as /dev/null) at -o is refused, not replaced.
        d = os.path.join(self.dir, "adir")
        os.mkdir(d)
        r = self.loom("compile", self.model, "--config", "tiny", "-o", d)
        self.assert_one_line_error(r, "-o " + d, "not a regular file")
        self.assertTrue(os.path.isdir(d))

    def test_fusion_policies(self):
        # --fusion reaches every segment, is recorded in the plan, and each
        # plan stays bit-exact under --check; an unknown policy is one line.
        for policy in ("none", "greedy", "cost"):
            out = os.path.join(self.dir, "p_" + policy + ".plan")
            r = self.loom("compile", self.model, "--config", "tiny", "--fusion", policy, "-o", out, "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(json.loads(r.stdout)["fusion"], policy)
            r = self.run_plan(out, "--check", out="out_" + policy)
            self.assertEqual(r.returncode, 0, r.stderr)
        out = os.path.join(self.dir, "p_bad.plan")
        r = self.loom("compile", self.model, "--config", "tiny", "--fusion", "always", "-o", out)
        self.assert_one_line_error(r, "--fusion", "unknown policy 'always'")
        self.assertFalse(os.path.exists(out))

    def test_trace(self):
        # A timed backend traces every segment on one device, slices named
        # by segment and layer; ref records no timelines and says so.
        t = os.path.join(self.dir, "t.json")
        r = self.run_plan(self.plan, "--trace", t, "--json")
        if BACKEND == "ref":
            self.assert_one_line_error(r, "--trace", "records no timelines")
            self.assertFalse(os.path.exists(t))
            return
        self.assertEqual(r.returncode, 0, r.stderr)
        run = json.loads(r.stdout)
        with open(t) as f:
            trace = json.load(f)
        self.assertEqual(trace["otherData"]["cycles"], run["cycles"])
        names = {e["name"] for e in trace["traceEvents"] if e["ph"] == "X"}
        layers = {"segment %d %s (%s)" % (l["segment"], l["name"], l["op"]) for l in run["layers"]}
        self.assertTrue(layers and layers <= names, (layers, names))
        self.assertTrue(any(n.endswith(": GEMM") and n.startswith("segment ") for n in names), names)

    def test_wrong_input(self):
        bad = os.path.join(self.dir, "x2.pb")
        write(bad, numpy_helper.from_array(np.zeros((1, 3, 6, 5), np.float32), "x").SerializeToString())
        r = self.loom("run", self.plan, "--backend", BACKEND, "--inputs", bad, "--outputs", os.path.join(self.dir, "out"))
        self.assert_one_line_error(r, "'x'", "[1,3,6,6]")


if __name__ == "__main__":
    LOOM, BACKEND = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=1)
