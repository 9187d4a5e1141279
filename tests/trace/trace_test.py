#!/usr/bin/env python3
"""Tests of `loom run --trace FILE`: the per-core timelines of a run, written
as Chrome trace-event JSON (docs/trace.md). A trace must parse, name a track
per core and unit, keep the intervals of each track disjoint and inside the
run, and its compute intervals must add up to the cores' cycles_compute
counters exactly. Bad paths give one line and leave no file behind.

Usage: trace_test.py LOOM_BINARY ROOT [unittest args...]
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

LOOM = None
ROOT = None
DEMO = None


def loom(*args):
    return subprocess.run([LOOM] + [str(a) for a in args], capture_output=True, text=True, timeout=600)


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loom_trace_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_one_line_error(self, r, *needles):
        self.assertNotEqual(r.returncode, 0, r.stdout)
        err = r.stderr.strip()
        self.assertEqual(len(err.splitlines()), 1, err)
        self.assertTrue(err.startswith("loom: error:"), err)
        for n in needles:
            self.assertIn(n, err)

    def run_traced(self, backend, config):
        plan = self.path("demo.plan")
        r = loom("compile", DEMO, "--config", config, "-o", plan)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = self.path("trace.json")
        r = loom("run", plan, "--backend", backend, "--trace", out, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            trace = json.load(f)
        return json.loads(r.stdout), trace

    def check_trace(self, run, trace, backend, compute_tracks):
        """Structural checks; returns the X events grouped by (core, track)."""
        other = trace["otherData"]
        self.assertEqual(other["backend"], backend)
        self.assertEqual(other["cycles"], run["cycles"])
        clock = other["clock_mhz"]
        self.assertGreater(clock, 0)
        events = trace["traceEvents"]
        names = {}
        tracks = {}
        for e in events:
            if e["ph"] == "M" and e["name"] == "thread_name":
                names[(e["pid"], e["tid"])] = e["args"]["name"]
            elif e["ph"] == "X":
                for key in ("name", "cat", "ts", "dur", "pid", "tid"):
                    self.assertIn(key, e)
                b, n = e["args"]["begin_cycle"], e["args"]["cycles"]
                self.assertGreater(n, 0, e)
                # ts/dur are microseconds of device time at the config's clock.
                self.assertAlmostEqual(e["ts"], b / clock, delta=1e-5)
                self.assertAlmostEqual(e["dur"], n / clock, delta=1e-5)
                self.assertGreaterEqual(b, 0, e)
                self.assertLessEqual(b + n, run["cycles"], e)
                tracks.setdefault((e["pid"], e["tid"]), []).append((b, b + n, e["name"]))
        # Every core that ran instructions has named tracks and compute intervals.
        ncores = len(run["cores"])
        for c in range(ncores):
            self.assertIn((c, 0), names)
            if run["cores"][c]["instructions"] == 0:
                continue
            mine = [k for k in tracks if k[0] == c]
            self.assertTrue(mine, "core %d has no intervals" % c)
            # Compute intervals sum to the counter (stated tolerance: exact).
            total = sum(e - b for k in mine if names[k] in compute_tracks for (b, e, _) in tracks[k])
            self.assertEqual(total, run["cores"][c]["counters"]["cycles_compute"], "core %d" % c)
        for key, ivs in tracks.items():
            ivs.sort()
            for (b0, e0, n0), (b1, e1, n1) in zip(ivs, ivs[1:]):
                self.assertLessEqual(e0, b1, "%s overlaps on core %d track %s" % ((n0, n1), key[0], names[key]))
        # The run starts with a doorbell at time zero.
        doorbells = [e for e in events if e["ph"] == "i" and e["name"] == "doorbell"]
        self.assertTrue(doorbells)
        self.assertEqual(min(e["args"]["begin_cycle"] for e in doorbells), 0)
        return tracks, names


class Tlm(Base):
    def test_tlm_trace_tiny(self):
        run, trace = self.run_traced("tlm", "tiny")
        tracks, names = self.check_trace(run, trace, "tlm", {"gemm", "post-op"})
        seen = set(names[k] for k in tracks)
        for t in ("load", "gemm", "post-op", "store"):
            self.assertIn(t, seen)
        # Slices are named by layer and op ("conv1 (conv2d): GEMM"), and the
        # layer track holds the layers themselves, in plan order.
        gemms = [n for k in tracks if names[k] == "gemm" for (_, _, n) in tracks[k]]
        self.assertTrue(gemms)
        # The gemm track also holds the depthwise unit's DWCONVs (dw3).
        self.assertTrue(all(n.endswith(" (conv2d): GEMM") or n.endswith(" (gemm): GEMM") or
                            n.endswith(" (conv2d): DWCONV") for n in gemms), set(gemms))
        self.assertIn("dw3 (conv2d): DWCONV", gemms)
        layer_names = [n for k in tracks if names[k] == "layer" for (_, _, n) in tracks[k]]
        self.assertIn("conv1 (conv2d)", layer_names)
        plan_layers = [l["name"] + " (" + l["op"] + ")" for l in run["layers"]]
        self.assertEqual(sorted(set(layer_names)), sorted(set(plan_layers)))

    def test_tlm_trace_default(self):
        run, trace = self.run_traced("tlm", "default")
        self.check_trace(run, trace, "tlm", {"gemm", "post-op"})


class Rtl(Base):
    def test_rtl_trace_tiny(self):
        run, trace = self.run_traced("rtl", "tiny")
        tracks, names = self.check_trace(run, trace, "rtl", {"compute"})
        seen = set(names[k] for k in tracks)
        for t in ("load", "compute", "store"):
            self.assertIn(t, seen)


class BadPath(Base):
    def test_unwritable_trace(self):
        r = loom("run", DEMO, "--config", "tiny", "--backend", "tlm", "--trace", self.path("no/such/dir/t.json"))
        self.assert_one_line_error(r, "no/such/dir/t.json", "cannot write the trace")
        self.assertFalse(os.path.exists(self.path("no")))

    def test_trace_onto_a_directory(self):
        d = self.path("adir")
        os.mkdir(d)
        r = loom("run", DEMO, "--config", "tiny", "--backend", "tlm", "--trace", d)
        self.assert_one_line_error(r, d, "cannot write the trace")
        self.assertTrue(os.path.isdir(d))
        self.assertEqual(sorted(os.listdir(self.dir)), ["adir"])  # no temporary file left

    def test_untimed_backend(self):
        out = self.path("t.json")
        r = loom("run", DEMO, "--config", "tiny", "--backend", "ref", "--trace", out)
        self.assert_one_line_error(r, "--trace", "ref")
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    LOOM, ROOT = sys.argv[1], sys.argv[2]
    DEMO = os.path.join(ROOT, "examples", "demo_cnn.json")
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=1)
