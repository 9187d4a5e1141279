#!/usr/bin/env python3
"""End-to-end tests of the `loom` command line as a user runs it: the demo is
bit-exact on every configuration, and every kind of bad input gets one line
naming the file (and node and field), a non-zero exit, and no output file.

Usage: cli_test.py LOOM_BINARY ROOT [unittest args...]
"""
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

LOOM = None
ROOT = None
DEMO = None

# A progress line (host/cli/progress.cc): "loom: run M on rtl: 0% after 5 s, about ? left" or "... done after 7 s".
PROGRESS_LINE = re.compile(r"^loom: \w+ .*: (\d+% after \d+ s\b.*|done after \d+ s)$")


def loom(*args):
    return subprocess.run([LOOM] + [str(a) for a in args], capture_output=True, text=True, timeout=300)


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loom_cli_")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    def write_graph(self, g, name="g.json"):
        p = self.path(name)
        with open(p, "w") as f:
            json.dump(g, f)
        return p

    def demo(self):
        with open(DEMO) as f:
            return json.load(f)

    def assert_one_line_error(self, r, *needles):
        self.assertNotEqual(r.returncode, 0, "exit code 0 on bad input; stdout=%s" % r.stdout)
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        self.assertEqual(len(lines), 1, "expected one error line, got: %r" % r.stderr)
        self.assertTrue(lines[0].startswith("loom: error:"), lines[0])
        for n in needles:
            self.assertIn(n, lines[0])
        return lines[0]

    def compile_bad(self, g, *needles):
        p = self.write_graph(g)
        out = self.path("out.plan")
        r = loom("compile", p, "--config", "tiny", "-o", out)
        self.assert_one_line_error(r, p, *needles)
        self.assertEqual([f for f in os.listdir(self.dir) if f != "g.json"], [], "partial output left behind")


class Demo(Base):
    def test_demo_bit_exact_on_every_config(self):
        for cfg in ("tiny", "small", "default"):
            plan = self.path("demo.%s.plan" % cfg)
            r = loom("compile", DEMO, "--config", cfg, "-o", plan)
            self.assertEqual(r.returncode, 0, r.stderr)
            r = loom("run", plan, "--backend", "ref", "--check", "--json")
            self.assertEqual(r.returncode, 0, r.stderr)
            j = json.loads(r.stdout)
            self.assertIs(j["bit_exact"], True)
            self.assertEqual(j["config"], cfg)
            self.assertGreater(j["instructions"], 0)
            macs = sum(c["counters"]["macs"] for c in j["cores"])
            self.assertGreater(macs, 0)

    def test_run_graph_directly_writes_outputs(self):
        out = self.path("outs")
        r = loom("run", DEMO, "--backend", "ref", "--config", "small", "--check", "--outputs", out, "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertTrue(j["bit_exact"])
        for i, o in enumerate(j["outputs"]):
            self.assertTrue(os.path.exists(os.path.join(out, "output_%d.pb" % i)))

    def test_outputs_feed_back_as_inputs_npy(self):
        # Run once with random inputs, save them via --outputs of an identity-free
        # path: write inputs with the seeded generator by running twice with the
        # same seed and comparing outputs (determinism), then as .npy.
        a, b = self.path("a"), self.path("b")
        for d in (a, b):
            r = loom("run", DEMO, "--config", "tiny", "--seed", "7", "--outputs", d, "--output-format", "npy")
            self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(open(os.path.join(a, "output_0.npy"), "rb").read(),
                         open(os.path.join(b, "output_0.npy"), "rb").read())

    def test_info_json_lists_configs(self):
        r = loom("info", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        names = [c["name"] for c in j["configs"]]
        for n in ("tiny", "small", "default"):
            self.assertIn(n, names)
        self.assertIn("ref", [b["name"] for b in j["backends"]])

    def test_progress_goes_to_stderr_never_stdout(self):
        env = dict(os.environ, LOOM_PROGRESS_INTERVAL="0")
        r = subprocess.run([LOOM, "run", DEMO, "--backend", "tlm", "--config", "tiny", "--json"],
                           capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        json.loads(r.stdout)  # the result alone
        lines = [l for l in r.stderr.splitlines() if l.startswith("loom: run ")]
        self.assertTrue(any("% after" in l and "left" in l for l in lines), r.stderr)
        self.assertTrue(lines[-1].endswith(" s") and "done after" in lines[-1], r.stderr)
        # A short run at the default interval shows nothing.
        env.pop("LOOM_PROGRESS_INTERVAL")
        r = subprocess.run([LOOM, "run", DEMO, "--backend", "tlm", "--config", "tiny"], capture_output=True, text=True,
                           timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")

    def test_help_on_every_command(self):
        for cmd in ([], ["info"], ["compile"], ["run"]):
            r = loom(*(cmd + ["--help"]))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("Usage", r.stdout)


class Bench(Base):
    def test_bench_gemm_reports_roofline_fields(self):
        r = loom("bench", "gemm", "--m", "64", "--n", "48", "--k", "40", "--config", "tiny", "--check", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["macs"], 64 * 48 * 40)
        self.assertEqual(j["counted_macs"], j["macs"])
        self.assertEqual(j["peak_macs_per_cycle"], 2 * 4 * 4)
        self.assertTrue(j["bit_exact"])
        for k in ("cycles", "roofline_cycles", "roofline_fraction"):
            self.assertIn(k, j)

    def test_bench_conv_resnet_layer(self):
        r = loom("bench", "conv", "--layer", "res5_3x3_512", "--config", "small", "--check", "--json")
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        self.assertEqual(j["macs"], 7 * 7 * 512 * 9 * 512)
        self.assertTrue(j["bit_exact"])

    def test_bench_unknown_layer(self):
        r = loom("bench", "conv", "--layer", "res9")
        self.assert_one_line_error(r, "res9")


class BadInput(Base):
    def test_malformed_json(self):
        p = self.path("g.json")
        open(p, "w").write('{"format": "loom-graph", "version": 1, "nodes": [ }')
        r = loom("compile", p, "--config", "tiny", "-o", self.path("out.plan"))
        self.assert_one_line_error(r, p)
        self.assertFalse(os.path.exists(self.path("out.plan")))

    def test_truncated_json(self):
        text = open(DEMO).read()
        p = self.path("g.json")
        open(p, "w").write(text[: len(text) // 2])
        r = loom("compile", p, "--config", "tiny", "-o", self.path("out.plan"))
        self.assert_one_line_error(r, p)
        self.assertFalse(os.path.exists(self.path("out.plan")))

    def test_unknown_op(self):
        g = self.demo()
        g["nodes"][0]["op"] = "conv9d"
        self.compile_bad(g, g["nodes"][0]["name"], "conv9d")

    def test_shape_mismatch(self):
        g = self.demo()
        w = g["nodes"][0]["inputs"][1]
        g["tensors"][w]["shape"][2] += 1  # input channels no longer match
        g["tensors"][w].pop("data", None)
        if "init" not in g["tensors"][w]:
            g["tensors"][w]["init"] = {"seed": 1}
        self.compile_bad(g, g["nodes"][0]["name"])

    def test_zero_point_out_of_range(self):
        g = self.demo()
        x = g["inputs"][0]
        g["tensors"][x]["zero_point"] = 300
        self.compile_bad(g, x, "zero_point")

    def test_negative_scale(self):
        g = self.demo()
        x = g["inputs"][0]
        g["tensors"][x]["scale"] = -0.5
        self.compile_bad(g, x, "scale")

    def test_unknown_config(self):
        out = self.path("out.plan")
        r = loom("compile", DEMO, "--config", "huge", "-o", out)
        self.assert_one_line_error(r, "--config", "huge")
        self.assertFalse(os.path.exists(out))

    def test_truncated_plan(self):
        plan = self.path("p.plan")
        self.assertEqual(loom("compile", DEMO, "--config", "tiny", "-o", plan).returncode, 0)
        data = open(plan, "rb").read()
        open(plan, "wb").write(data[: len(data) - 100])
        out = self.path("outs")
        r = loom("run", plan, "--outputs", out)
        self.assert_one_line_error(r, plan, "truncated")
        self.assertFalse(os.path.exists(out))

    def test_corrupted_plan(self):
        plan = self.path("p.plan")
        self.assertEqual(loom("compile", DEMO, "--config", "tiny", "-o", plan).returncode, 0)
        data = bytearray(open(plan, "rb").read())
        data[-40] ^= 0xFF
        open(plan, "wb").write(bytes(data))
        out = self.path("outs")
        r = loom("run", plan, "--outputs", out)
        self.assert_one_line_error(r, plan, "checksum")
        self.assertFalse(os.path.exists(out))

    def test_plan_config_mismatch(self):
        plan = self.path("p.plan")
        self.assertEqual(loom("compile", DEMO, "--config", "tiny", "-o", plan).returncode, 0)
        r = loom("run", plan, "--config", "small")
        self.assert_one_line_error(r, "tiny", "small")

    def test_unknown_backend(self):
        r = loom("run", DEMO, "--backend", "fpga9")
        self.assert_one_line_error(r, "fpga9")

    def test_bad_cli_argument(self):
        r = loom("run", DEMO, "--seed", "banana")
        self.assert_one_line_error(r, "seed")

    def test_missing_input_file(self):
        r = loom("run", DEMO, "--inputs", self.path("nope.pb"))
        self.assert_one_line_error(r, "nope.pb")

    def test_wave_is_fst_and_never_half_written(self):
        vcd = self.path("w.vcd")
        self.assert_one_line_error(loom("run", DEMO, "--backend", "rtl", "--config", "tiny", "--wave", vcd), "*.fst")
        self.assert_one_line_error(loom("run", DEMO, "--backend", "rtl", "--config", "tiny", "--wave",
                                        os.path.join(self.dir, "no", "w.fst")), "does not exist")
        fst = self.path("w.fst")
        r = loom("run", DEMO, "--backend", "rtl", "--config", "tiny", "--wave", fst)
        self.assertEqual(r.returncode, 0, r.stderr)
        # The file named, stdout the result (and a progress line when the
        # run takes more than a few seconds, as on a loaded machine).
        lines = [ln for ln in r.stderr.splitlines() if not PROGRESS_LINE.match(ln)]
        self.assertEqual(lines, ["loom run: wrote %s" % fst], r.stderr)
        with open(fst, "rb") as f:
            self.assertGreater(len(f.read()), 100)
        self.assertEqual(sorted(os.listdir(self.dir)), ["w.fst"])
        # A run that fails after the fabric ran (outputs differ from the
        # expected ones) keeps its waves: the failure is debugged from them.
        os.remove(fst)
        outs = self.path("outs")
        r = loom("run", DEMO, "--backend", "rtl", "--config", "tiny", "--outputs", outs, "--output-format", "npy")
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(outs, "output_0.npy"), "r+b") as f:
            f.seek(-1, os.SEEK_END)
            last = f.read(1)[0]
            f.seek(-1, os.SEEK_END)
            f.write(bytes([last ^ 0x55]))
        r = loom("run", DEMO, "--backend", "rtl", "--config", "tiny", "--expected", outs, "--wave", fst)
        self.assertNotEqual(r.returncode, 0)
        lines = [ln for ln in r.stderr.splitlines() if not PROGRESS_LINE.match(ln)]  # a run over 5 s shows progress
        self.assertEqual(len(lines), 2, r.stderr)  # the error, and where the waves to debug it are
        self.assertTrue(lines[0].startswith("loom: error:") and "outputs differ" in lines[0], r.stderr)
        self.assertEqual(lines[1], "loom run: wrote " + fst)
        with open(fst, "rb") as f:
            self.assertGreater(len(f.read()), 100)
        shutil.rmtree(outs)
        # Interrupted: either the run finished first (a whole file) or nothing is left.
        os.remove(fst)
        p = subprocess.Popen([LOOM, "run", DEMO, "--backend", "rtl", "--config", "small", "--wave", fst],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
        if p.returncode == 0:
            self.assertEqual(sorted(os.listdir(self.dir)), ["w.fst"])
        else:
            self.assertIn(p.returncode, (130, -signal.SIGINT), err)
            self.assertEqual(os.listdir(self.dir), [], err)

    def test_written_files_are_named_on_stderr(self):
        # Every file a command writes is named on stderr, one line each;
        # stdout stays the result (here JSON that must parse alone).
        env = dict(os.environ, LOOM_PROGRESS_INTERVAL="")
        plan = self.path("p.plan")
        r = subprocess.run([LOOM, "compile", DEMO, "--config", "tiny", "-o", plan, "--json"], capture_output=True,
                           text=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        json.loads(r.stdout)
        self.assertEqual(r.stderr, "loom compile: wrote %s\n" % plan)
        trace, outs = self.path("t.json"), self.path("outs")
        r = subprocess.run([LOOM, "run", plan, "--backend", "tlm", "--trace", trace, "--outputs", outs, "--json"],
                           capture_output=True, text=True, timeout=300, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        files = [o["file"] for o in j["outputs"]]
        self.assertTrue(files)
        self.assertEqual(r.stderr.splitlines(), ["loom run: wrote " + trace] + ["loom run: wrote " + f for f in files])
        self.assertTrue(os.path.isfile(trace))

    def test_input_shape_mismatch(self):
        # Write a wrongly shaped .npy by hand (header + data).
        p = self.path("x.npy")
        hdr = "{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }"
        hdr = hdr + " " * (64 - 10 - len(hdr) - 1) + "\n"
        open(p, "wb").write(b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + bytes(3))
        r = loom("run", DEMO, "--inputs", p)
        self.assert_one_line_error(r, p)



class Hostile(Base):
    """Classes of hostile input (docs/security.md): special files, budgets,
    alias expansion, prefix-parsed numbers, and a failed check leaving nothing."""

    def test_failed_check_leaves_no_outputs(self):
        plan = self.path("p.plan")
        self.assertEqual(loom("compile", DEMO, "--config", "tiny", "-o", plan).returncode, 0)
        g = self.demo()
        g["tensors"]["w1"]["init"]["seed"] = 999  # other weights, same inputs and outputs
        other = self.write_graph(g, "other.json")
        out = self.path("outs")
        r = loom("run", plan, "--check", "--graph", other, "--outputs", out)
        self.assert_one_line_error(r, "differ", "nothing written")
        self.assertFalse(os.path.exists(out))

    def test_number_options_are_validated_never_defaulted(self):
        # Every option of every command, found in `loom --cli-reference`: an
        # empty value, or for a number option a value that is not a plain
        # finite number (a time: also < 0), is one line naming the flag,
        # before anything runs; never "not given".
        ref = loom("--cli-reference")
        self.assertEqual(ref.returncode, 0, ref.stderr)
        checked = {}
        cmd, positionals = None, []
        for line in ref.stdout.splitlines():
            if line.startswith("loom ") and "[OPTIONS]" in line:
                words = line.split()[1:]
                cmd = [w for w in words if w.islower()]
                positionals = ["x" for w in words if w.isupper()]
                continue
            cells = [c.strip() for c in line.split("|")[1:-1]]
            if cmd is None or len(cells) != 4 or not cells[0].startswith("`-"):
                continue
            flag, kind = cells[0].strip("`").split(", ")[-1], cells[1].split(":")[0].split(" ")[0]
            if kind != "flag":  # an empty value is refused, never taken as "not given"
                with self.subTest(cmd=cmd, flag=flag, value=""):
                    self.assert_one_line_error(loom(*cmd, *positionals, flag, ""), flag + ": ")
                checked[" ".join(cmd) + " " + flag] = kind
            bad = {"FLOAT": ["nan", "inf", "-inf", "1e400", "0x10", " 1", "1,5"],
                   "INT": ["0x10", "1e3", " 1", "1.5"], "UINT": ["0x10", "-1", "1.5"]}.get(kind)
            if bad is None:
                continue
            if kind == "FLOAT" and flag.endswith("-ms"):
                bad = bad + ["-5", "-1e300", "-0.001"]
            for v in bad:
                with self.subTest(cmd=cmd, flag=flag, value=v):
                    r = loom(*cmd, *positionals, flag, v)
                    self.assert_one_line_error(r, flag)
            checked[" ".join(cmd) + " " + flag] = kind
        # The options of the issue and a few more are among those checked.
        for name in ("tune --swap-at-ms", "serve --max-queue-delay-ms", "serve --load-scale", "serve --slack-margin",
                     "run --atol", "compare --min-cosine", "serve --seed", "bench gemm --m", "serve --config",
                     "run --mem-stall", "report --timeline-ms"):
            self.assertIn(name, checked)

    def test_special_files_are_refused_without_blocking(self):
        fifo = self.path("x.npy")
        os.mkfifo(fifo)
        zero = self.path("zero.npy")
        os.symlink("/dev/zero", zero)
        for args, needle in (((DEMO, "--inputs", fifo), "not a regular file"),
                             ((DEMO, "--inputs", zero), "not a regular file"),
                             ((self.dir + "/",), "")):
            r = loom("run", *args)
            self.assert_one_line_error(r, needle)
        os.symlink("/dev/zero", self.path("z.json"))
        self.assert_one_line_error(loom("compile", self.path("z.json"), "-o", self.path("o.plan")),
                                   "not a regular file")
        self.assertFalse(os.path.exists(self.path("o.plan")))

    def workload(self, text):
        p = self.path("w.yaml")
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_workload_budgets(self):
        base = "config: tiny\nduration_ms: %s\nstreams:\n  - name: s\n    model: gemm_chain\n    slo_ms: 5\n    arrival: %s\n"
        two = base + "  - name: t\n    model: gemm_chain\n    slo_ms: 5\n    arrival: %s\n"
        # Two streams of 5.9 M requests: each under the per-stream limit, all
        # under the 20 M cap, but 2.2 GiB of request records.
        w = self.workload(two % ("5.9e6", "{poisson: {rate: 1000}}", "{poisson: {rate: 1000}}"))
        r = loom("serve", w, "--backend", "tlm", "-o", self.path("r.json"))
        self.assert_one_line_error(r, "expects about 11.8 M requests in all streams: about 2.2 GiB of request records")
        self.assertFalse(os.path.exists(self.path("r.json")))
        for dur, arrival, needle in (("1e300", "{poisson: {rate: 10}}", "duration_ms"),
                                     ("1e8", "{poisson: {rate: 1e9}}", "requests"),
                                     ("1e8", "{bursty: {on_rate: 1, off_rate: 0, on_ms: 1e-9, off_ms: 1e-9}}",
                                      "periods")):
            w = self.workload(base % (dur, arrival))
            r = loom("serve", w, "--backend", "tlm", "-o", self.path("r.json"))
            self.assert_one_line_error(r, needle)
            self.assertFalse(os.path.exists(self.path("r.json")))

    def test_yaml_alias_expansion_is_bounded(self):
        lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
        for k in range(1, 9):
            lines.append("a%d: &a%d [%s]" % (k, k, ", ".join(["*a%d" % (k - 1)] * 10)))
        w = self.workload("\n".join(lines) + "\n")
        r = loom("serve", w, "--backend", "tlm")
        self.assert_one_line_error(r, "alias expansion")

    def test_yaml_nesting_and_anchors_are_read_in_one_pass(self):
        # 100,000 nested flow levels stop at the 65th; 100,000 anchors are a
        # hash map, both read in one pass.
        w = self.workload("streams: " + "[" * 100000 + "]" * 100000 + "\n")
        self.assert_one_line_error(loom("serve", w, "--backend", "tlm"), "nesting deeper than 64 levels")
        w = self.workload("x: [" + ", ".join("&a%d 1" % i for i in range(100000)) + "]\n")
        self.assert_one_line_error(loom("serve", w, "--backend", "tlm"), "unknown field 'x'")
        w = self.workload("a: *nowhere\n")
        self.assert_one_line_error(loom("serve", w, "--backend", "tlm"), "unknown alias")

if __name__ == "__main__":
    LOOM, ROOT = sys.argv[1], sys.argv[2]
    DEMO = os.path.join(ROOT, "examples", "demo_cnn.json")
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=1)
