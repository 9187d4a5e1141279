#!/usr/bin/env python3
"""The device options (docs/backends.md "Device options"): each flag reaches
the backend that takes it, its environment variable stands in for it on that
backend only, a flag wins over the variable, a backend refuses an option it
does not take, and a bad value is one error line naming the flag or variable.

Usage: device_flags_test.py LOOM_BINARY ROOT [unittest args...]
"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

LOOM = ROOT = None
VARS = ("LOOM_SIM_FAULT", "LOOM_SIM_STALL", "LOOM_SIM_SEED", "LOOM_RTL_SEED", "LOOM_RTL_STALL", "LOOM_RTL_TRACE",
        "LOOM_RTL_MODEL",
        "LOOM_XCLBIN", "LOOM_XRT_DEVICE", "LOOM_XRT_TIMEOUT_MS", "LOOM_XRT_ARENA_MIB")


def loom(args, env=None, timeout=300):
    e = {k: v for k, v in os.environ.items() if k not in VARS}
    e.update(env or {})
    return subprocess.run([LOOM] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=e)


def has_backend(name):
    r = loom(["info"])
    return any(line.strip().startswith(name + ":") and "not built" not in line for line in r.stdout.splitlines())


class Device(unittest.TestCase):
    def graph(self):
        return os.path.join(ROOT, "examples", "demo_cnn.json")

    def cycles(self, args, env=None):
        r = loom(["run", self.graph(), "--config", "tiny", "--json"] + args, env)
        self.assertEqual(r.returncode, 0, r.stderr)
        return json.loads(r.stdout)["cycles"]

    def one_line(self, r, starts):
        self.assertNotEqual(r.returncode, 0)
        lines = r.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, r.stderr)
        self.assertTrue(lines[0].startswith("loom: error: " + starts), r.stderr)
        self.assertNotIn("Traceback", r.stderr)

    def test_flag_and_variable_reach_the_backend(self):
        plain = self.cycles(["--backend", "tlm"])
        flag = self.cycles(["--backend", "tlm", "--mem-stall", "200"])
        env = self.cycles(["--backend", "tlm"], {"LOOM_SIM_STALL": "200"})
        self.assertGreater(flag, plain)
        self.assertEqual(flag, env)
        # The flag wins over a variable (even a malformed one).
        self.assertEqual(self.cycles(["--backend", "tlm", "--mem-stall", "200"], {"LOOM_SIM_STALL": "lots"}), flag)
        # Half the bursts stalled, the choice seeded: between the two, and the
        # same for the same seed.
        half = self.cycles(["--backend", "tlm", "--mem-stall", "200:0.5", "--device-seed", "3"])
        self.assertGreater(half, plain)
        self.assertLess(half, flag)
        self.assertEqual(self.cycles(["--backend", "tlm", "--mem-stall", "200:0.5"], {"LOOM_SIM_SEED": "3"}), half)

    def test_memory_fault_fails_the_run(self):
        r = loom(["run", self.graph(), "--config", "tiny", "--backend", "tlm", "--mem-faults", "decerr@0x0+0xffffffffff"])
        self.one_line(r, "tlm: core 0: device error axi_decerr")

    def test_rtl_stalls_are_seeded(self):
        plain = self.cycles(["--backend", "rtl"])
        a = self.cycles(["--backend", "rtl", "--axi-stall", "0.2", "--device-seed", "5"])
        b = self.cycles(["--backend", "rtl"], {"LOOM_RTL_STALL": "0.2", "LOOM_RTL_SEED": "5"})
        self.assertGreater(a, plain)
        self.assertEqual(a, b)

    def test_rtl_model_builds_agree_and_refusals(self):
        # The builds of the tiny fabric in this build (LOOM_TEST_RTL_FAST names
        # the configurations with a fast model): same cycles, bit-exact; auto
        # is the fast one when it exists. --wave needs the checked model.
        fast_built = "tiny" in os.environ.get("LOOM_TEST_RTL_FAST", "").split(",")
        def run(args, env=None):
            r = loom(["run", self.graph(), "--config", "tiny", "--backend", "rtl", "--check", "--json"] + args, env)
            self.assertEqual(r.returncode, 0, r.stderr)
            j = json.loads(r.stdout)
            self.assertTrue(j["bit_exact"], r.stdout)
            return j["cycles"]
        checked = run(["--rtl-model", "checked"])
        self.assertEqual(run([]), checked)
        self.assertEqual(run(["--rtl-model", "auto"]), checked)
        self.assertEqual(run([], {"LOOM_RTL_MODEL": "checked"}), checked)
        fst = os.path.join(self.tmp, "w.fst")
        self.one_line(loom(["run", self.graph(), "--config", "tiny", "--backend", "rtl", "--rtl-model", "fast",
                            "--wave", fst]), "--rtl-model: the fast model writes no waveform")
        self.assertFalse(os.listdir(self.tmp))
        if fast_built:
            self.assertEqual(run(["--rtl-model", "fast"]), checked)
        else:
            self.one_line(loom(["run", self.graph(), "--config", "tiny", "--backend", "rtl", "--rtl-model", "fast"]),
                          "--rtl-model: config 'tiny' has no fast model in this build")
        self.one_line(loom(["run", self.graph(), "--config", "tiny", "--backend", "rtl", "--rtl-model", "quick"]),
                      "--rtl-model: expected auto, checked or fast, got 'quick'")
        self.one_line(loom(["run", self.graph(), "--config", "tiny", "--backend", "rtl"], {"LOOM_RTL_MODEL": "quick"}),
                      "LOOM_RTL_MODEL: expected auto, checked or fast")
        self.one_line(loom(["run", self.graph(), "--config", "tiny", "--backend", "tlm", "--rtl-model", "fast"]),
                      "--rtl-model: the tlm backend does not take this option")

    def test_a_backend_refuses_an_option_it_does_not_take(self):
        g = self.graph()
        self.one_line(loom(["run", g, "--config", "tiny", "--backend", "tlm", "--axi-stall", "0.1"]),
                      "--axi-stall: the tlm backend does not take this option (it takes --mem-faults")
        self.one_line(loom(["run", g, "--config", "tiny", "--backend", "ref", "--mem-stall", "3"]),
                      "--mem-stall: the ref backend does not take this option (it takes none")
        self.one_line(loom(["run", g, "--config", "tiny", "--backend", "tlm", "--wave", os.path.join(self.tmp, "w.fst")]),
                      "--wave: the tlm backend does not take this option")
        self.assertFalse(os.listdir(self.tmp))
        if has_backend("xrt-emu"):
            self.one_line(loom(["bringup", "--backend", "xrt-emu", "--mem-stall", "4"]),
                          "--mem-stall: the xrt-emu backend does not take this option")
        # Another backend's variable is not read.
        r = loom(["run", g, "--config", "tiny", "--backend", "ref"], {"LOOM_SIM_FAULT": "junk", "LOOM_RTL_STALL": "9"})
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_bad_values_are_one_line_naming_their_source(self):
        g = self.graph()
        cases = [
            (["--backend", "tlm", "--device-seed", "-3"], {}, "--device-seed: expected a whole number"),
            (["--backend", "rtl", "--axi-stall", "1.5"], {}, "--axi-stall: expected a probability in [0, 1)"),
            (["--backend", "rtl"], {"LOOM_RTL_STALL": "2"}, "LOOM_RTL_STALL: expected a probability"),
            (["--backend", "tlm"], {"LOOM_SIM_STALL": "lots"}, "LOOM_SIM_STALL: 'lots' is not CYCLES"),
            # An empty flag is an error, not "not given" (which would read the variable).
            (["--backend", "tlm", "--mem-stall", ""], {"LOOM_SIM_STALL": "300"}, "--mem-stall: an empty value"),
            (["--backend", "tlm", "--mem-faults", "oops@1+2"], {}, "--mem-faults: 'oops@1+2' is not KIND@ADDR+LEN"),
            (["--backend", "tlm", "--mem-faults", "slverr#3"], {}, "--mem-faults: KIND#N (the n-th burst) is supported by cosim only"),
            (["--backend", "xrt-emu"], {"LOOM_XRT_TIMEOUT_MS": "abc"}, "LOOM_XRT_TIMEOUT_MS: expected a whole number"),
            (["--backend", "xrt-emu", "--device-timeout-ms", "0"], {}, "--device-timeout-ms: must be at least 1 ms"),
            (["--backend", "xrt-emu", "--arena-mib", "0"], {}, "--arena-mib: must be 1 to 65536 MiB"),
        ]
        emu = has_backend("xrt-emu")
        for args, env, want in cases:
            if "xrt-emu" in args and not emu:
                continue
            with self.subTest(args=args, env=env):
                self.one_line(loom(["run", g, "--config", "tiny"] + args, env), want)
        if emu:
            self.one_line(loom(["bringup", "--backend", "xrt-emu"], {"LOOM_XRT_TIMEOUT_MS": "abc"}),
                          "LOOM_XRT_TIMEOUT_MS: expected a whole number")

    def test_device_flags_on_bench_serve_and_tune(self):
        # bench measures with the options; serve and tune refuse what the backend does not take.
        def bench(extra):
            r = loom(["bench", "gemm", "--m", "64", "--n", "64", "--k", "64", "--backend", "tlm", "--config", "tiny",
                      "--json"] + extra)
            self.assertEqual(r.returncode, 0, r.stderr)
            return json.loads(r.stdout)["cycles"]
        self.assertGreater(bench(["--mem-stall", "300"]), bench([]))
        wl = os.path.join(ROOT, "examples", "serve_bursty_workload.yaml")
        self.one_line(loom(["serve", wl, "--backend", "tlm", "--axi-stall", "0.1"]), "--axi-stall: the tlm backend")
        self.one_line(loom(["tune", os.path.join(ROOT, "examples", "tune_drift_workload.yaml"), "--backend", "tlm",
                            "--xclbin", "x.xclbin"]), "--xclbin: the tlm backend")

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="loom_devflags_")

    def tearDown(self):
        for f in os.listdir(self.tmp):
            os.remove(os.path.join(self.tmp, f))
        os.rmdir(self.tmp)


if __name__ == "__main__":
    LOOM, ROOT = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:])
