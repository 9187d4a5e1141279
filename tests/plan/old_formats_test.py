#!/usr/bin/env python3
"""Plan files of the formats loom wrote before program files (format 1: a
JSON graph's plan; format 2: an ONNX model's program plan) through `loom run`
as a user has them: checked against the reference, giving the outputs of the
same model compiled now, and refused in one line when damaged
(docs/plan-format.md). The fixtures are in tests/plan/fixtures.

usage: old_formats_test.py LOOM ROOT [unittest args]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

LOOM = ROOT = None
# The format-2 fixture records this path as its model (`loom run --check`
# rebuilds the reference from it).
V2_SOURCE = "/tmp/loom_plan_fixtures/two_segments.onnx"


def fixture(name):
    return os.path.join(ROOT, "tests", "plan", "fixtures", name)


def read(path):
    with open(path, "rb") as f:
        return f.read()


class OldFormats(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loom_oldfmt_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def loom(self, *args):
        return subprocess.run([LOOM] + list(args), capture_output=True, text=True, timeout=300, cwd=ROOT)

    def ok(self, r):
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout) if r.stdout.lstrip().startswith("{") else r.stdout

    def one_line_error(self, r, *needles):
        err = r.stderr.strip()
        self.assertTrue(0 < r.returncode < 128, "exit %d: %s" % (r.returncode, err))
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("loom: error: "), err)
        for n in needles:
            self.assertIn(n, err)

    def out(self, name):
        return os.path.join(self.dir, name)

    def test_format_1_runs_as_the_graph_compiled_now(self):
        plan = fixture("demo_cnn.tiny.v1.plan")
        # The graph it records (relative to the checkout) is the reference.
        j = self.ok(self.loom("run", plan, "--backend", "ref", "--seed", "3", "--check", "--json", "--outputs",
                              self.out("old")))
        self.assertEqual(j["kind"], "plan")
        self.assertIs(j["bit_exact"], True)
        self.assertEqual(j["compile_options"]["fusion"], "cost")
        self.ok(self.loom("run", "examples/demo_cnn.json", "--config", "tiny", "--backend", "ref", "--seed", "3",
                          "--json", "--outputs", self.out("now")))
        self.assertEqual(read(self.out("old/output_0.pb")), read(self.out("now/output_0.pb")))
        # A recorded option that disagrees with a flag is refused as before.
        self.one_line_error(self.loom("run", plan, "--backend", "ref", "--fusion", "none"), "--fusion",
                            "recompile it")

    def test_format_2_runs_as_the_model_compiled_now(self):
        os.makedirs(os.path.dirname(V2_SOURCE), exist_ok=True)
        tmp = V2_SOURCE + ".%d" % os.getpid()
        shutil.copyfile(fixture("two_segments.onnx"), tmp)
        os.replace(tmp, V2_SOURCE)
        x = fixture("two_segments.x.pb")
        plan = fixture("two_segments.tiny.v2.plan")
        j = self.ok(self.loom("run", plan, "--backend", "ref", "--inputs", x, "--check", "--json", "--outputs",
                              self.out("old")))
        self.assertEqual(j["kind"], "onnx_plan")
        self.assertIs(j["bit_exact"], True)
        self.assertEqual(len(j["segments"]), 2)
        self.assertEqual(j["fallback_op_count"], 5)
        self.ok(self.loom("run", fixture("two_segments.onnx"), "--config", "tiny", "--backend", "ref", "--inputs", x,
                          "--json", "--outputs", self.out("now")))
        self.assertEqual(read(self.out("old/output_0.pb")), read(self.out("now/output_0.pb")))

    def test_damaged_old_files_are_refused_in_one_line(self):
        for name in ("demo_cnn.tiny.v1.plan", "two_segments.tiny.v2.plan"):
            b = read(fixture(name))
            bad = self.out("bad_" + name)
            with open(bad, "wb") as f:
                f.write(b[:len(b) - 100])
            self.one_line_error(self.loom("run", bad, "--backend", "ref"), bad, "truncated")
            c = bytearray(b)
            c[len(c) // 2] ^= 0x10
            with open(bad, "wb") as f:
                f.write(bytes(c))
            self.one_line_error(self.loom("run", bad, "--backend", "ref"), bad, "checksum")


if __name__ == "__main__":
    LOOM, ROOT = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
