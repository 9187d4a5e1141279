#!/usr/bin/env python3
"""Every `loom compile` and `loom run` flag on every input kind: a JSON graph,
its plan, an ONNX model and its program plan. A compile flag means the same on
each (one CompileOptions, recorded whole in the plan); on a plan, a flag that
agrees with what it records is accepted and one that disagrees is one error
line naming it; the run flags (inputs, seeds, outputs and their format,
--check, --expected, --layer-cycles, --trace, --json) give the same report
fields whatever the kind.

Usage: flags_test.py LOOM_BINARY ROOT [unittest args...]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

LOOM = ROOT = None

# Compile flags and the compile_options fields they set (config tiny).
COMPILE_FLAGS = [
    (["--cores", "1"], {"cores": 1}),
    (["--fusion", "none"], {"fusion": "none"}),
    (["--placement", "pipeline"], {"placement": "pipeline"}),
    (["--placement", "dynamic", "--tasks-per-core", "2"], {"placement": "dynamic", "tasks_per_core": 2}),
    (["--hls", "auto"], {"hls": "auto"}),
    (["--exact-host"], {"exact_host": True}),
]


def loom(*args, timeout=300):
    return subprocess.run([LOOM] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)


class Kinds(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom_flags_")
        cls.graph = os.path.join(ROOT, "examples", "demo_cnn.json")
        sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
        from program_plan_test import two_segment_model  # the two-segment QDQ model of the program-plan tests
        m, cls.x = two_segment_model()
        cls.onnx = os.path.join(cls.dir, "two.onnx")
        with open(cls.onnx, "wb") as f:
            f.write(m.SerializeToString())
        cls.cost = os.path.join(cls.dir, "cost.json")
        with open(cls.cost, "w") as f:
            json.dump({"kind": "loom-cost-params", "version": 1, "config": "tiny", "layer_cycles": 100.0}, f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def ok(self, r):
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout) if r.stdout.lstrip().startswith("{") else None

    def one_line_error(self, r, *needles):
        self.assertNotEqual(r.returncode, 0, r.stdout)
        err = r.stderr.strip()
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("loom: error: "), err)
        for n in needles:
            self.assertIn(n, err)

    def models(self):
        return (("graph", self.graph), ("onnx", self.onnx))

    def compile(self, model, name, *flags):
        out = self.path(name)
        self.ok(loom("compile", model, "--config", "tiny", "-o", out, *flags))
        return out

    def test_compile_flags_mean_the_same_on_every_kind(self):
        for flags, fields in COMPILE_FLAGS + [(["--cost-params", self.cost], {})]:
            for kind, model in self.models():
                with self.subTest(kind=kind, flags=flags):
                    # compile and run-on-the-fly record the same options.
                    c = self.ok(loom("compile", model, "--config", "tiny", "-o", self.path("p.plan"), "--json", *flags))
                    r = self.ok(loom("run", model, "--config", "tiny", "--backend", "ref", "--json", *flags))
                    self.assertEqual(c["compile_options"], r["compile_options"])
                    for k, v in fields.items():
                        self.assertEqual(r["compile_options"][k], v)
                    if flags[0] == "--cost-params":
                        self.assertEqual(r["compile_options"]["cost_params"]["layer_cycles"], 100.0)
                    # The plan records them; run PLAN accepts the same flags
                    # and reports the same options.
                    p = self.ok(loom("run", self.path("p.plan"), "--backend", "ref", "--json", *flags))
                    self.assertEqual(p["compile_options"], c["compile_options"])
                    self.assertEqual(p["outputs"], r["outputs"])

    def test_plan_refuses_a_flag_that_disagrees(self):
        for kind, model in self.models():
            plan = self.compile(model, kind + ".plan")
            for flags, flag in ((["--placement", "dynamic"], "--placement"), (["--cores", "1"], "--cores"),
                                (["--fusion", "greedy"], "--fusion"), (["--hls", "auto"], "--hls"),
                                (["--tasks-per-core", "3"], "--tasks-per-core"),
                                (["--cost-params", self.cost], "--cost-params")):
                with self.subTest(kind=kind, flag=flag):
                    self.one_line_error(loom("run", plan, "--backend", "ref", *flags), flag, "recompile it")
            # Flags equal to the recorded defaults are fine.
            self.ok(loom("run", plan, "--backend", "ref", "--placement", "static", "--fusion", "cost"))

    def test_run_flags_on_every_kind(self):
        for kind, model in self.models():
            plan = self.compile(model, kind + "_run.plan")
            for what, target in ((kind, model), (kind + " plan", plan)):
                with self.subTest(what=what):
                    # Seeded inputs when none are given: same seed, same outputs.
                    a = self.ok(loom("run", target, "--config", "tiny", "--backend", "ref", "--json", "--seed", "7",
                                     "--outputs", self.path("s7"), "--output-format", "npy"))
                    b = self.ok(loom("run", target, "--config", "tiny", "--backend", "ref", "--json", "--seed", "7",
                                     "--outputs", self.path("s7b"), "--output-format", "npy"))
                    c = self.ok(loom("run", target, "--config", "tiny", "--backend", "ref", "--json", "--seed", "8",
                                     "--outputs", self.path("s8"), "--output-format", "npy"))
                    self.assertEqual(a["seed"], 7)
                    for k, o in enumerate(a["outputs"]):
                        self.assertTrue(o["file"].endswith("output_%d.npy" % k), o)
                    same = [open(os.path.join(self.path("s7"), f), "rb").read() ==
                            open(os.path.join(self.path("s7b"), f), "rb").read() for f in os.listdir(self.path("s7"))]
                    diff = [open(os.path.join(self.path("s7"), f), "rb").read() !=
                            open(os.path.join(self.path("s8"), f), "rb").read() for f in os.listdir(self.path("s7"))]
                    self.assertTrue(all(same) and any(diff))
                    # The same report fields on every kind.
                    for key in ("compile_options", "cycles", "instructions", "cores", "layers", "outputs"):
                        self.assertIn(key, c)
                    self.assertTrue(c["layers"])
                    # --expected: the outputs just written pass; a changed
                    # tolerance is reported; --check is bit-exact.
                    e = self.ok(loom("run", target, "--config", "tiny", "--backend", "ref", "--json", "--seed", "7",
                                     "--expected", self.path("s7"), "--atol", "0", "--rtol", "0", "--check"))
                    self.assertTrue(e["expected"]["within_tolerance"])
                    self.assertTrue(e["bit_exact"])
                    self.assertEqual(e["expected"]["outputs"][0]["max_abs_diff"], 0)
                    bad = self.path("s8_wrong")
                    r = loom("run", target, "--config", "tiny", "--backend", "ref", "--seed", "7",
                             "--expected", self.path("s8"), "--atol", "0", "--rtol", "0", "--outputs", bad)
                    self.one_line_error(r, "reference outputs", "nothing written")
                    self.assertFalse(os.path.exists(bad))
                    shutil.rmtree(self.path("s7")), shutil.rmtree(self.path("s7b")), shutil.rmtree(self.path("s8"))

    def test_expected_folder_supplies_its_inputs(self):
        # The ONNX test-data layout: DIR/input_0.pb and DIR/output_0.pb.
        from onnx import numpy_helper
        d = self.path("test_data")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "input_0.pb"), "wb") as f:
            f.write(numpy_helper.from_array(self.x, "x").SerializeToString())
        plan = self.compile(self.onnx, "td.plan")
        for target in (self.onnx, plan):
            with self.subTest(target=target):
                shutil.rmtree(self.path("td_out"), ignore_errors=True)
                self.ok(loom("run", target, "--config", "tiny", "--backend", "ref", "--inputs",
                             os.path.join(d, "input_0.pb"), "--outputs", self.path("td_out")))
                shutil.copy(os.path.join(self.path("td_out"), "output_0.pb"), os.path.join(d, "output_0.pb"))
                e = self.ok(loom("run", target, "--config", "tiny", "--backend", "ref", "--json", "--expected", d,
                                 "--atol", "0", "--rtol", "0"))
                self.assertNotIn("seed", e)  # inputs read from the folder
                self.assertTrue(e["expected"]["required"] and e["expected"]["within_tolerance"], e["expected"])
                # Seeded inputs give other outputs: the same folder then fails.
                with open(os.path.join(d, "output_0.pb"), "rb") as f:
                    want = f.read()
                os.remove(os.path.join(d, "input_0.pb"))
                r = loom("run", target, "--config", "tiny", "--backend", "ref", "--expected", d, "--atol", "0",
                         "--rtol", "0")
                self.one_line_error(r, "reference outputs")
                with open(os.path.join(d, "input_0.pb"), "wb") as f:
                    f.write(numpy_helper.from_array(self.x, "x").SerializeToString())
                self.assertTrue(want)

    def test_layer_cycles_and_trace_on_every_kind(self):
        for kind, model in self.models():
            plan = self.compile(model, kind + "_tlm.plan")
            for what, target in ((kind, model), (kind + " plan", plan)):
                with self.subTest(what=what):
                    whole = self.ok(loom("run", target, "--config", "tiny", "--backend", "tlm", "--json"))
                    self.assertTrue(all(l["cycles"] is None for l in whole["layers"]))
                    t = self.path("t.json")
                    cut = self.ok(loom("run", target, "--config", "tiny", "--backend", "tlm", "--json",
                                       "--layer-cycles", "--trace", t))
                    cycles = [l["cycles"] for l in cut["layers"]]
                    self.assertTrue(all(c is not None and c > 0 for c in cycles), cycles)
                    self.assertEqual(sum(cycles), cut["cycles"])
                    # Cuts cost about one ring fetch per layer boundary; a
                    # whole run may in turn refill its instruction ring where
                    # the cut runs do not (demo on tiny: 506 instructions,
                    # 2 refills; whole 31,673 cycles, cut 31,486).
                    self.assertGreaterEqual(cut["cycles"], whole["cycles"] * 0.98)
                    self.assertLessEqual(cut["cycles"], whole["cycles"] * 1.05)
                    with open(t) as f:
                        names = {e["name"] for e in json.load(f)["traceEvents"] if e["ph"] == "X"}
                    self.assertTrue(any(n.endswith(": GEMM") for n in names), names)
                    os.remove(t)

    def test_bad_values_are_one_line_on_every_kind(self):
        for kind, model in self.models():
            for flags, flag in ((["--placement", "ring"], "--placement"), (["--fusion", "x"], "--fusion"),
                                (["--hls", "on"], "--hls"), (["--cores", "3"], "--cores"),
                                (["--cost-params", self.path("missing.json")], "missing.json")):
                with self.subTest(kind=kind, flags=flags):
                    self.one_line_error(loom("run", model, "--config", "tiny", "--backend", "ref", *flags), flag)
                    out = self.path("bad.plan")
                    self.one_line_error(loom("compile", model, "--config", "tiny", "-o", out, *flags), flag)
                    self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    LOOM, ROOT = os.path.abspath(sys.argv[1]), sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)
