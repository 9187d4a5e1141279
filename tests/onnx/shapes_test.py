#!/usr/bin/env python3
"""Shape binding on ONNX models (docs/onnx.md "Shapes"): --input-shape,
--dim and --batch on compile and run, symbolic dimensions bound from the
--inputs, re-batching a batch-1 export, and the one-line refusals.

Usage: shapes_test.py LOOM BACKEND
"""
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import zoo  # noqa: E402

LOOM = BACKEND = None


def quantized(fmodel, in_name, calib_shape, path):
    """quantize_static in the zoo's QDQ form, calibrated at `calib_shape`."""
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    logging.getLogger().setLevel(logging.ERROR)
    fpath = path + ".float.onnx"
    onnx.save(fmodel, fpath)
    quantize_static(fpath, path, zoo._Reader(in_name, calib_shape, 1), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True,
                    reduce_range=True, calibrate_method=CalibrationMethod.MinMax,
                    extra_options={"ActivationSymmetric": False, "WeightSymmetric": True})
    q = onnx.load(path)
    for o in q.opset_import:
        if o.domain in ("", "ai.onnx"):
            o.version = 17
    q.ir_version = 8
    onnx.save(q, path)


def cnn(in_shape, out_shape, reshape_batch=None):
    """conv-relu, strided conv-relu, global pool, then Flatten or a
    Reshape to [reshape_batch, -1] (a batch-1 export's form), then a Linear."""
    n = zoo.Net(5)
    x = n.relu(n.conv("input", 3, 8, 3))
    x = n.relu(n.conv(x, 8, 16, 3, stride=2))
    x = n.node("GlobalAveragePool", [x])
    if reshape_batch is None:
        x = n.node("Flatten", [x], axis=1)
    else:
        x = n.node("Reshape", [x, n.const("shape", np.array([reshape_batch, -1], np.int64))])
    x = n.node("Add", [n.node("MatMul", [x, n.weight("fc", (16, 10), 16)]), n.bias("fb", 10)])
    return n.model("cnn", "input", in_shape, x, out_shape)


def block(in_shape):
    """A residual MLP block over [batch, seq, 32]."""
    n = zoo.Net(6)
    h = n.relu(n.linear("input", 32, 64))
    y = n.node("Add", ["input", n.linear(h, 64, 32)])
    return n.model("block", "input", in_shape, y, in_shape)


def save_pb(path, a):
    with open(path, "wb") as f:
        f.write(numpy_helper.from_array(a, "input").SerializeToString())


def load_pb(path):
    with open(path, "rb") as f:
        return numpy_helper.to_array(onnx.load_tensor_from_string(f.read()))


class Shapes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom_shapes_")
        cls.cnn_n = os.path.join(cls.dir, "cnn_n.onnx")
        quantized(cnn(["N", 3, 16, 16], ["N", 10]), "input", [1, 3, 16, 16], cls.cnn_n)
        cls.cnn_1 = os.path.join(cls.dir, "cnn_1.onnx")
        quantized(cnn([1, 3, 16, 16], [1, 10], reshape_batch=1), "input", [1, 3, 16, 16], cls.cnn_1)
        cls.block = os.path.join(cls.dir, "block.onnx")
        quantized(block(["batch", "seq", 32]), "input", [1, 8, 32], cls.block)
        cls.rows = os.path.join(cls.dir, "rows.onnx")
        quantized(block(["seq", 32]), "input", [8, 32], cls.rows)
        rng = np.random.default_rng(7)
        cls.x3 = rng.standard_normal((3, 3, 16, 16)).astype(np.float32)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def loom(self, *args):
        return subprocess.run([LOOM, *args], capture_output=True, text=True, timeout=300)

    def run_ok(self, *args):
        r = self.loom(*args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r

    def refused(self, args, *needles):
        r = self.loom(*args)
        self.assertIn(r.returncode, (1, 2), r.stdout + r.stderr)  # 2: the command line itself
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertTrue(r.stderr.startswith("loom: error: "), r.stderr)
        for n in needles:
            self.assertIn(n, r.stderr)

    def run_outputs(self, model, x, *flags, backend="ref"):
        d = tempfile.mkdtemp(dir=self.dir)
        xin = os.path.join(d, "x.pb")
        save_pb(xin, x)
        r = self.run_ok("run", model, "--backend", backend, "--inputs", xin, "--outputs", d, "--check", "--json",
                        *flags)
        j = json.loads(r.stdout)
        return load_pb(os.path.join(d, "output_0.pb")), j

    def per_image(self, model, x, *flags):
        return np.concatenate([self.run_outputs(model, x[i:i + 1], *flags)[0] for i in range(len(x))])

    def test_unbound_symbolic_dimension_is_refused_naming_it(self):
        for cmd in (["compile", self.cnn_n, "-o", os.path.join(self.dir, "never.plan")], ["run", self.cnn_n]):
            self.refused(cmd, "input 'input' dimension 0 ('N')", "--dim SYMBOL=N", "--batch N")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "never.plan")))
        self.refused(["run", self.block, "--dim", "seq=8"], "dimension 0 ('batch')")

    def test_symbolic_batch_bound_by_flag_or_inputs_runs_on_the_device(self):
        per = self.per_image(self.cnn_n, self.x3, "--batch", "1")
        for flags in ([], ["--batch", "3"], ["--dim", "N=3"], ["--input-shape", "input=3,3,16,16"]):
            y, j = self.run_outputs(self.cnn_n, self.x3, *flags, backend=BACKEND)
            self.assertTrue(j["bit_exact"], flags)
            self.assertGreaterEqual(len(j["segments"]), 1, flags)
            self.assertEqual(sorted(h["op"] for h in j["host_ops"]), ["DequantizeLinear", "QuantizeLinear"], flags)
            self.assertEqual(y.shape, (3, 10))
            np.testing.assert_array_equal(y, per, "batch of 3 differs from its images run one by one: %s" % flags)

    def test_family_pads_a_batch_to_its_bucket_and_caches_the_program(self):
        # A batch of 3 runs the bucket-4 program, bit-exact with a direct
        # compile at batch 3; the program is compiled once, then read from
        # the cache (and --check rebuilds its reference from the model).
        direct, _ = self.run_outputs(self.cnn_n, self.x3, backend=BACKEND)
        cache = os.path.join(self.dir, "family_cache")
        for want in ("compiled", "read from the cache"):
            y, j = self.run_outputs(self.cnn_n, self.x3, "--bucket", "N=1,2,4", "--cache", cache, backend=BACKEND)
            self.assertTrue(j["bit_exact"])
            self.assertEqual(j["checked_segments"], 1)
            self.assertEqual(j["family"]["bucket"], "N=3 -> 4 (padded)")
            self.assertEqual(j["family"]["input_shapes"], {"dims": {"N": 4}})
            self.assertEqual(j["family"]["program"], want)
            np.testing.assert_array_equal(y, direct)
        self.assertEqual(len(os.listdir(cache)), 1)
        # A value equal to a bucket is not padded; a sequence may not be padded.
        rng = np.random.default_rng(3)
        y, j = self.run_outputs(self.block, rng.standard_normal((2, 12, 32)).astype(np.float32),
                                "--bucket", "seq=8,12,16", "--bucket", "batch=2,4", backend=BACKEND)
        self.assertEqual(j["family"]["bucket"], "batch=2, seq=12")
        self.assertEqual(y.shape, (2, 12, 32))

    def test_family_splits_a_batch_above_its_largest_bucket(self):
        # A batch of 7 with buckets 1,2,4 runs the bucket-4 program on rows
        # 0-3 and on rows 4-6 padded to 4, on one device; the outputs are
        # joined, bit-exact with a direct compile at batch 7 and with each
        # image alone.
        x7 = np.random.default_rng(11).standard_normal((7, 3, 16, 16)).astype(np.float32)
        direct, _ = self.run_outputs(self.cnn_n, x7, backend=BACKEND)
        y, j = self.run_outputs(self.cnn_n, x7, "--bucket", "N=1,2,4", "--layer-cycles", backend=BACKEND)
        self.assertTrue(j["bit_exact"])
        self.assertEqual(j["family"]["bucket"], "N=7 split into 4, 3 -> 4 (padded)")
        self.assertEqual([r["rows"] for r in j["family"]["runs"]], [[0, 4], [4, 7]])
        self.assertEqual([r["bucket"] for r in j["family"]["runs"]], ["N=4", "N=3 -> 4 (padded)"])
        self.assertEqual(j["checked_segments"], 2 * len(j["segments"]))
        self.assertEqual(sorted({layer["run"] for layer in j["layers"]}), [0, 1])
        if j["has_time"]:
            self.assertEqual(j["cycles"], sum(s["cycles"] for s in j["segments"]))
        self.assertEqual(y.shape, (7, 10))
        import jsonschema
        with open(os.path.join(HERE, "..", "..", "docs", "schema", "run.schema.json")) as f:
            jsonschema.validate(j, json.load(f))
        np.testing.assert_array_equal(y, direct)
        np.testing.assert_array_equal(y, self.per_image(self.cnn_n, x7, "--batch", "1"))
        # The last run in a smaller bucket: 5 = 2 + 2 + 1 with buckets 1,2.
        y, j = self.run_outputs(self.cnn_n, x7[:5], "--bucket", "N=1,2", backend=BACKEND)
        self.assertEqual(j["family"]["bucket"], "N=5 split into 2, 2, 1")
        self.assertTrue(j["bit_exact"])
        np.testing.assert_array_equal(y, direct[:5])

    def test_family_compiled_ahead_of_time_is_what_run_reads(self):
        # `loom compile --bucket ... -o DIR`: one program per bucket
        # combination, the folder `run --bucket ... --cache DIR` then reads
        # (no compile), bit-exact with the direct compile.
        d = os.path.join(self.dir, "aot")
        r = self.run_ok("compile", self.block, "--bucket", "seq=8,16", "--bucket", "batch=2,4", "-o", d, "--json")
        j = json.loads(r.stdout)
        self.assertEqual([p["bucket"] for p in j["programs"]],
                         ["batch=2, seq=8", "batch=2, seq=16", "batch=4, seq=8", "batch=4, seq=16"])
        self.assertTrue(all(p["program"] == "compiled" and p["segments"] >= 1 for p in j["programs"]))
        self.assertEqual(len(os.listdir(d)), 4)
        x = np.random.default_rng(5).standard_normal((3, 16, 32)).astype(np.float32)
        direct, _ = self.run_outputs(self.block, x, backend=BACKEND)
        y, j = self.run_outputs(self.block, x, "--bucket", "seq=8,16", "--bucket", "batch=2,4", "--cache", d,
                                backend=BACKEND)
        self.assertEqual(j["family"]["program"], "read from the cache")
        self.assertEqual(j["family"]["bucket"], "batch=3 -> 4 (padded), seq=16")
        self.assertTrue(j["bit_exact"])
        np.testing.assert_array_equal(y, direct)
        self.assertEqual(len(os.listdir(d)), 4)  # nothing compiled again
        # A second compile finds every program there.
        r = self.run_ok("compile", self.block, "--bucket", "seq=8,16", "--bucket", "batch=2,4", "-o", d, "--json")
        self.assertTrue(all(p["program"] == "read from the folder" for p in json.loads(r.stdout)["programs"]))
        self.refused(["compile", self.block, "--bucket", "seq=8", "-o", d], "symbol 'batch'", "has no buckets")
        self.refused(["compile", self.block, "--bucket", "seq=8", "--bucket", "batch=2", "--dim", "seq=8", "-o", d],
                     "leave out --input-shape")

    def test_zoo_builds_a_symbolic_batch_run_as_a_family(self):
        # `loom zoo build --batch 3`: batch dimension 'N', test data a batch
        # of 3, run on the bucket-4 program; a graph that fixes its batch
        # (the encoder's head split) is refused.
        d = os.path.join(self.dir, "zoo_n")
        self.run_ok("zoo", "build", "mobilenetv2", "--slice", "block", "--batch", "3", "-o", d)
        m = onnx.load(os.path.join(d, "model.onnx"))
        self.assertEqual(m.graph.input[0].type.tensor_type.shape.dim[0].dim_param, "N")
        with open(os.path.join(d, "zoo.json")) as f:
            self.assertEqual(json.load(f)["batch"], 3)
        r = self.run_ok("run", os.path.join(d, "model.onnx"), "--inputs", os.path.join(d, "test_data_set_0", "input_0.pb"),
                        "--bucket", "N=1,2,4,8", "--backend", BACKEND, "--check", "--json")
        j = json.loads(r.stdout)
        self.assertTrue(j["bit_exact"])
        self.assertEqual(j["family"]["bucket"], "N=3 -> 4 (padded)")
        self.assertEqual(j["outputs"][0]["shape"][0], 3)
        self.refused(["zoo", "build", "encoder", "--slice", "small", "--batch", "2", "-o", os.path.join(self.dir, "enc")],
                     "cannot take a symbolic batch")
        self.assertFalse(os.path.exists(os.path.join(self.dir, "enc")))

    def test_family_refusals_are_one_line(self):
        d = tempfile.mkdtemp(dir=self.dir)
        x3, b12 = os.path.join(d, "x3.pb"), os.path.join(d, "b12.pb")
        save_pb(x3, self.x3)
        save_pb(b12, np.zeros((2, 12, 32), np.float32))
        self.refused(["run", self.block, "--inputs", b12, "--bucket", "seq=8,16"],
                     "seq=12 is in no bucket (8,16)", "'seq' is not the batch dimension")
        self.refused(["run", self.block, "--inputs", b12, "--bucket", "seq=4,8"],
                     "seq=12 is above the largest bucket (4,8)")
        self.refused(["run", self.cnn_n, "--inputs", x3, "--bucket", "Q=1"], "no graph input", "'Q' (it has: N)")
        self.refused(["run", self.cnn_n, "--inputs", x3, "--bucket", "N=0,2"], "--bucket", "got '0'")
        self.refused(["run", self.cnn_n, "--inputs", x3, "--bucket", "N=2", "--bucket", "N=4"], "given twice")
        self.refused(["run", self.cnn_n, "--inputs", x3, "--bucket", "N=4", "--batch", "3"], "leave out --input-shape")
        self.refused(["run", self.cnn_n, "--bucket", "N=4"], "give --inputs")
        self.refused(["run", self.cnn_n, "--inputs", x3, "--cache", d], "--cache", "give --bucket")

    def test_batch_one_export_is_rebatched(self):
        # Reshape(x, [1, -1]) of a batch-1 export reshapes each image of the batch.
        per = self.per_image(self.cnn_1, self.x3)
        y, j = self.run_outputs(self.cnn_1, self.x3, "--batch", "3", backend=BACKEND)
        self.assertTrue(j["bit_exact"])
        self.assertEqual(len(j["host_ops"]), 2, j["host_ops"])
        np.testing.assert_array_equal(y, per)
        # The batch-1 model itself refuses a batch it was not bound to.
        d = tempfile.mkdtemp(dir=self.dir)
        save_pb(os.path.join(d, "x.pb"), self.x3)
        self.refused(["run", self.cnn_1, "--inputs", os.path.join(d, "x.pb")], "shape [3,3,16,16]", "[1,3,16,16]")

    def test_sequence_binding_forms_agree_and_the_plan_records_them(self):
        plans = {}
        for name, flags in (("dim", ["--dim", "seq=12", "--dim", "batch=2"]),
                            ("shape", ["--input-shape", "input=2,12,32"]),
                            ("mixed", ["--batch", "2", "--dim", "seq=12"])):
            plans[name] = os.path.join(self.dir, "block_%s.plan" % name)
            r = self.run_ok("compile", self.block, "-o", plans[name], "--json", *flags)
            j = json.loads(r.stdout)
            self.assertEqual(j["fallback_op_count"], 2, j["host_ops"])
            plans[name + "_insns"] = sum(s["instructions"] for s in j["segments"])
        self.assertEqual(plans["dim_insns"], plans["shape_insns"])
        self.assertEqual(plans["dim_insns"], plans["mixed_insns"])
        # --check of a plan rebuilds its reference from the model with the recorded shapes.
        r = self.run_ok("run", plans["dim"], "--backend", BACKEND, "--check", "--json")
        self.assertTrue(json.loads(r.stdout)["bit_exact"])
        self.run_ok("run", plans["dim"], "--dim", "seq=12", "--dim", "batch=2")
        self.refused(["run", plans["dim"], "--dim", "seq=16"], "--dim", "was compiled with 'batch=2 seq=12'")

    def test_serve_binds_a_streams_dims_and_batches_on_the_batch_dimension(self):
        trace = os.path.join(self.dir, "four.trace")
        with open(trace, "w") as f:
            f.write("0\n0\n0\n0\n")
        w = os.path.join(self.dir, "w.yaml")

        def serve(stream):
            with open(w, "w") as f:
                f.write("config: tiny\nduration_ms: 1\nbatching: fixed\nmax_batch: 4\nmax_queue_delay_ms: 0.5\n"
                        "streams:\n  - {name: s, %s, slo_ms: 500, arrival: {trace: {file: %s}}}\n" % (stream, trace))
            return self.loom("serve", w, "--backend", "tlm", "--json")

        r = serve("model: %s" % self.block)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.count("\n"), 1, r.stderr)
        self.assertIn("dimension 1 ('seq')", r.stderr)
        self.assertIn("dims: {SYMBOL: N}", r.stderr)
        r = serve("model: %s, dims: {seq: 12}" % self.block)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["completed"], 4)
        batches = sorted(x["batch"] for x in j["service_times"]["table"])
        self.assertIn(4, batches, "the four requests ran as one batch-4 program")
        # A leading dimension the stream binds is no batch: each request runs the program alone.
        r = serve("model: %s, dims: {seq: 12}" % self.rows)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["completed"], 4)
        self.assertEqual(sorted({x["batch"] for x in j["service_times"]["table"]}), [1])
        self.refused(["serve", w.replace("w.yaml", "bad.yaml")], "bad.yaml")
        with open(w, "w") as f:
            f.write("duration_ms: 1\nstreams:\n  - {name: s, model: gemm_chain, dims: {seq: 2}, slo_ms: 5, arrival: {poisson: {rate: 1}}}\n")
        self.refused(["serve", w, "--backend", "tlm"], "field 'dims'", "has none")

    def test_bad_bindings_are_one_line(self):
        out = os.path.join(self.dir, "bad.plan")
        cases = [
            (["--dim", "N=0"], "--dim", "whole number from 1"),
            (["--dim", "N"], "--dim", "SYMBOL=N"),
            (["--dim", "nope=2"], "--dim nope", "no graph input has a symbolic dimension 'nope'", "'N'"),
            (["--dim", "N=2", "--dim", "N=3"], "given twice"),
            (["--input-shape", "other=1,3,16,16"], "no graph input 'other'", "'input'"),
            (["--input-shape", "input=1,3,16"], "rank 4, not 3"),
            (["--input-shape", "input=2,3,16,x"], "got 'x'"),
            (["--input-shape", "input=2,3,16,16", "--dim", "N=3"], "'N' is 3 by --dim N, not 2"),
            (["--batch", "2", "--input-shape", "input=3,3,16,16"], "--batch", "differs"),
            (["--batch", "0"], "--batch"),
        ]
        for flags, *needles in cases:
            with self.subTest(flags=flags):
                self.refused(["compile", self.cnn_n, "-o", out, *flags], *needles)
                self.assertFalse(os.path.exists(out))
        graph = os.path.join(HERE, "..", "..", "examples", "demo_cnn.json")
        self.refused(["compile", graph, "-o", out, "--batch", "2"], "--batch", "JSON graph")
        self.refused(["run", graph, "--dim", "N=2"], "--dim", "JSON graph")


if __name__ == "__main__":
    LOOM, BACKEND = sys.argv[1], sys.argv[2]
    unittest.main(argv=sys.argv[:1])
