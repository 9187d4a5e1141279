#!/usr/bin/env python3
"""cli.schema.*: every JSON result loom prints carries schema_version and
validates against its schema in docs/schema/ (real outputs of real runs).

Usage: schema_test.py LOOM ROOT [unittest args]
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import jsonschema

LOOM = sys.argv[1]
ROOT = sys.argv[2]
SCHEMAS = os.path.join(ROOT, "docs", "schema")


def schema(result):
    with open(os.path.join(SCHEMAS, result + ".schema.json")) as f:
        return json.load(f)


class Schemas(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom_schema_")
        sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
        from program_plan_test import two_segment_model  # the two-segment QDQ model of the program-plan tests
        m, _ = two_segment_model()
        cls.onnx = os.path.join(cls.dir, "two.onnx")
        with open(cls.onnx, "wb") as f:
            f.write(m.SerializeToString())
        cls.graph = os.path.join(ROOT, "examples", "demo_cnn.json")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def result(self, *args):
        r = subprocess.run([LOOM, *args], capture_output=True, text=True, timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j.get("schema_version"), 1, args)
        jsonschema.validate(j, schema(j["result"]))
        return j

    def test_schemas_are_valid_and_cover_every_result(self):
        files = sorted(glob.glob(os.path.join(SCHEMAS, "*.schema.json")))
        for f in files:
            with open(f) as fh:
                jsonschema.Draft202012Validator.check_schema(json.load(fh))
        kinds = set()
        for src in glob.glob(os.path.join(ROOT, "host", "cli", "*.cc")):
            with open(src) as fh:
                kinds |= set(re.findall(r'versioned\("(\w+)"', fh.read()))
        have = {os.path.basename(f)[: -len(".schema.json")] for f in files}
        self.assertTrue(kinds, "no versioned() result found in host/cli")
        self.assertEqual(kinds - have, set(), "results without a schema in docs/schema")
        self.assertEqual(have - kinds, set(), "schemas of no result")

    def test_a_wrong_field_fails_its_schema(self):
        j = self.result("info", "--json")
        j["backends"] = "ref"
        with self.assertRaises(jsonschema.ValidationError):
            jsonschema.validate(j, schema("info"))
        del j["schema_version"]
        with self.assertRaises(jsonschema.ValidationError):
            jsonschema.validate(j, schema("info"))

    def test_run_every_input_kind(self):
        plan = os.path.join(self.dir, "d.plan")
        c = self.result("compile", self.graph, "--config", "tiny", "-o", plan, "--json")
        self.assertEqual(c["result"], "compile")
        oplan = os.path.join(self.dir, "two.plan")
        self.result("compile", self.onnx, "--config", "tiny", "-o", oplan, "--json")
        for model, kind in ((self.graph, "graph"), (plan, "plan"), (self.onnx, "onnx"), (oplan, "onnx_plan")):
            for backend in ("ref", "tlm"):
                j = self.result("run", model, "--backend", backend, "--config", "tiny", "--check", "--json")
                self.assertEqual(j["kind"], kind)
                self.assertTrue(j["bit_exact"])
                self.assertEqual(j["has_time"], backend == "tlm")

    def test_compare(self):
        # loom against ONNX Runtime on the QLinear model (scripts/compare.py
        # writes the document, loom prints it as the "compare" result).
        j = self.result("compare", self.onnx, "--json")
        self.assertEqual([r["op"] for r in j["layers"]], ["graph input", "QLinearConv", "Softmax", "QLinearConv"])

    def test_bench_serve_tune(self):
        self.result("bench", "gemm", "--config", "tiny", "--json")
        self.result("bench", "fusion", "--config", "tiny", "--json")
        cache = os.path.join(self.dir, "cache")
        self.result("serve", os.path.join(ROOT, "examples", "serve_mix_workload.yaml"), "--cache", cache, "--json")
        self.result("serve", os.path.join(ROOT, "examples", "serve_faults_workload.yaml"), "--mode", "live",
                    "--fault", "window@5/0", "--json")
        # One core a batch: the gang plans add no field to the result, and measuring them takes
        # minutes under the sanitizers (tests/tune covers them).
        self.result("tune", os.path.join(ROOT, "examples", "tune_drift_workload.yaml"), "--max-cores-per-batch", "1",
                    "--rounds", "2", "--json")

    def test_bringup(self):
        r = subprocess.run([LOOM, "info", "--json"], capture_output=True, text=True, check=True)
        if "xrt-emu" not in {b["name"] for b in json.loads(r.stdout)["backends"]}:
            self.skipTest("xrt-emu is not built into this loom")
        # A build without a verilated model fails its checks: the report is
        # still a result, with "ok": false and exit code 1.
        r = subprocess.run([LOOM, "bringup", "--backend", "xrt-emu", "--config", "tiny", "--json"],
                           capture_output=True, text=True, timeout=600)
        j = json.loads(r.stdout)
        self.assertEqual(j.get("schema_version"), 1)
        jsonschema.validate(j, schema("bringup"))
        self.assertEqual(r.returncode, 0 if j["ok"] else 1, r.stderr)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
