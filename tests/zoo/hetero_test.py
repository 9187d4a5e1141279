#!/usr/bin/env python3
"""`loom compile model.onnx --hls auto|off --placement static|pipeline|dynamic`
on a small zoo slice, as a user runs it: every device segment compiles with
the options (recorded in the program plan), `loom run PLAN --check` is
bit-exact on ref and tlm, the plan's outputs equal those of the default
compile; bad values and impossible combinations are one-line errors that
write nothing.

Usage: hetero_test.py LOOM_BINARY ROOT [unittest args...]
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

LOOM = None
ROOT = None
_MODEL_DIR = None  # one zoo build shared by the tests of a run


def loom(*args, timeout=600):
    return subprocess.run([LOOM] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


def zoo_model():
    """The MobileNetV2 block slice (depthwise, pointwise convs, residual add), built once."""
    global _MODEL_DIR
    if _MODEL_DIR is None:
        d = tempfile.mkdtemp(prefix="loom_hetero_zoo_")
        r = loom("zoo", "build", "mobilenetv2", "--slice", "block", "-o", os.path.join(d, "m"))
        if r.returncode != 0:
            raise RuntimeError("loom zoo build: " + r.stderr)
        _MODEL_DIR = os.path.join(d, "m")
    return os.path.join(_MODEL_DIR, "model.onnx"), os.path.join(_MODEL_DIR, "test_data_set_0", "input_0.pb")


def read_meta(plan):
    with open(plan, "rb") as f:
        b = f.read()
    assert b[:8] == b"LOOMPLAN"
    meta_len = struct.unpack_from("<Q", b, 16)[0]
    return json.loads(b[40:40 + meta_len])


def rewrite_meta(plan, out, edit):
    """Writes `plan` to `out` with its metadata JSON edited by `edit` (checksum redone)."""
    with open(plan, "rb") as f:
        b = f.read()
    version, flags, meta_len, payload_len = struct.unpack_from("<IIQQ", b, 8)
    meta = json.loads(b[40:40 + meta_len])
    edit(meta)
    m = json.dumps(meta).encode()
    body = m + b[40 + meta_len:]
    h = 0xcbf29ce484222325
    for c in body:
        h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    with open(out, "wb") as f:
        f.write(b"LOOMPLAN" + struct.pack("<IIQQQ", version, flags, len(m), payload_len, h) + body)


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loom_hetero_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def compile(self, config, *opts):
        model, _ = zoo_model()
        plan = self.path("m_%s_%s.plan" % (config, "_".join(o.strip("-") for o in opts) or "default"))
        r = loom("compile", model, "--config", config, "-o", plan, "--json", *opts)
        self.assertEqual(r.returncode, 0, r.stderr)
        return plan, json.loads(r.stdout)

    def run_check(self, plan, backend):
        _, inp = zoo_model()
        out = self.path("out_%s_%s" % (os.path.basename(plan), backend))
        r = loom("run", plan, "--backend", backend, "--check", "--json", "--inputs", inp, "--outputs", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertIs(j["bit_exact"], True)
        with open(os.path.join(out, "output_0.pb"), "rb") as f:
            return j, f.read()

    def one_line_error(self, r, *words):
        self.assertNotEqual(r.returncode, 0, r.stdout)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("loom: error: "), r.stderr)
        for w in words:
            self.assertIn(w, lines[0])


class Options(Base):
    def test_hls_auto_ref_tlm_tiny(self):
        off, _ = self.compile("tiny")
        plan, c = self.compile("tiny", "--hls", "auto")
        self.assertEqual(c["hls"], "auto")
        self.assertEqual(read_meta(plan)["compile_options"]["hls"], "auto")
        self.assertEqual(read_meta(off)["compile_options"]["hls"], "off")
        # The block's layers this config's models move to units (docs/zoo.md).
        self.assertGreaterEqual(sum(s["unit_calls"] for s in c["segments"]), 1, c)
        _, want = self.run_check(off, "ref")
        for b in ("ref", "tlm"):
            j, got = self.run_check(plan, b)
            self.assertEqual(got, want, b)  # same outputs as without units
        j, _ = self.run_check(off, "tlm")
        self.assertGreater(j["cycles"], 0)

    def test_hls_auto_tlm_small(self):
        off, _ = self.compile("small")
        plan, c = self.compile("small", "--hls", "auto")
        self.assertEqual(read_meta(plan)["compile_options"]["hls"], "auto")
        self.assertEqual(self.run_check(plan, "tlm")[1], self.run_check(off, "tlm")[1])

    def test_placement_dynamic_ref_tlm_tiny(self):
        plan, c = self.compile("tiny", "--placement", "dynamic", "--tasks-per-core", "2")
        self.assertEqual(c["placement"], "dynamic")
        meta = read_meta(plan)["compile_options"]
        self.assertEqual(meta["placement"], "dynamic")
        self.assertEqual(meta["tasks_per_core"], 2)
        self.assertGreaterEqual(sum(s["tasks"] for s in c["segments"]), 1, c)
        _, want = self.run_check(self.compile("tiny")[0], "ref")
        for b in ("ref", "tlm"):
            self.assertEqual(self.run_check(plan, b)[1], want, b)

    def test_placement_pipeline_ref(self):
        plan, c = self.compile("tiny", "--placement", "pipeline")
        self.assertEqual(read_meta(plan)["compile_options"]["placement"], "pipeline")
        self.run_check(plan, "ref")


class BadInput(Base):
    def test_bad_values(self):
        model, _ = zoo_model()
        out = self.path("x.plan")
        for flags, word in ((("--hls", "foo"), "--hls"), (("--placement", "foo"), "--placement"),
                            (("--tasks-per-core", "0"), "--tasks-per-core"), (("--fusion", "foo"), "--fusion")):
            r = loom("compile", model, "--config", "tiny", "-o", out, *flags)
            self.one_line_error(r, word)
            self.assertFalse(os.path.exists(out), flags)

    def test_hls_auto_with_dynamic_placement(self):
        model, _ = zoo_model()
        out = self.path("x.plan")
        r = loom("compile", model, "--config", "tiny", "-o", out, "--hls", "auto", "--placement", "dynamic")
        self.one_line_error(r, "segment 0", "--placement static only")
        self.assertFalse(os.path.exists(out))

    def test_bad_plan_fields(self):
        plan, _ = self.compile("tiny", "--hls", "auto")
        for field, value, word in (("hls", "on", "field 'compile_options.hls'"),
                                   ("placement", "ring", "field 'compile_options.placement'"),
                                   ("tasks_per_core", 0, "field 'compile_options.tasks_per_core'"),
                                   ("hls", 3, "field 'compile_options.hls'"),
                                   ("cores", 99, "field 'compile_options.cores'"),
                                   ("spare", 1, "field 'compile_options.spare'")):
            bad = self.path("bad.plan")
            rewrite_meta(plan, bad, lambda m: m["compile_options"].__setitem__(field, value))
            r = loom("run", bad, "--backend", "ref")
            self.one_line_error(r, word)


if __name__ == "__main__":
    LOOM, ROOT = os.path.abspath(sys.argv[1]), sys.argv[2]
    try:
        unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
    finally:
        if _MODEL_DIR is not None:
            shutil.rmtree(os.path.dirname(_MODEL_DIR), ignore_errors=True)
