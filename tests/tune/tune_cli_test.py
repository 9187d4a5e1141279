#!/usr/bin/env python3
"""`loom tune` as a user runs it, on the tlm backend: the plan swap loses and
reorders nothing (checked against the workload's own accounting), same seed ->
byte-identical report, bad input -> one line, non-zero exit, no report file.

Usage: tune_cli_test.py LOOM_BINARY ROOT TestName
"""
import concurrent.futures
import json
import struct
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

LOOM = None
ROOT = None

WORKLOAD = """config: default
duration_ms: 30
seed: 2
batching: fixed
scheduling: dynamic
max_batch: 2
max_queue_delay_ms: 0.2
streams:
  - name: a
    model: gemm_chain
    hidden: 32
    ffn: 64
    slo_ms: 50
    arrival: {poisson: {rate: 1500}}
    seq_len: {values: [16, 64, 256], weights: [6, 3, 1], drift: [{at_ms: 12, weights: [1, 3, 6]}]}
  - name: b
    model: gemm_chain
    hidden: 32
    ffn: 64
    slo_ms: 50
    arrival: {poisson: {rate: 800}}
    seq_len: {values: [32, 128], weights: [3, 1]}
"""


# The zoo BERT layer, lengths 20-450 drifting from short to long at 3 s.
BERT_WORKLOAD = """config: default
duration_ms: 9000
seed: 1
batching: fixed
scheduling: dynamic
max_batch: 2
max_queue_delay_ms: 5
streams:
  - name: bert
    model: zoo:bert
    slo_ms: 5000
    arrival: {poisson: {rate: 2}}
    seq_len:
      values: [20, 48, 100, 200, 300, 450]
      weights: [5, 4, 1, 0, 0, 0]
      drift: [{at_ms: 3000, weights: [0, 0, 1, 3, 4, 2]}]
"""


# A user's ONNX model with symbolic batch and seq (scripts/export_forms.py
# encoder_dynamic), lengths 10-60 drifting from short to long at 300 ms.
ENCODER_WORKLOAD = """config: default
duration_ms: 800
seed: 1
batching: fixed
scheduling: dynamic
max_batch: 4
max_queue_delay_ms: 5
streams:
  - name: encoder
    model: encoder_dynamic.onnx
    slo_ms: 50
    arrival: {poisson: {rate: 400}}
    seq_len:
      values: [10, 20, 30, 40, 60]
      weights: [5, 4, 1, 0, 0]
      drift: [{at_ms: 300, weights: [0, 0, 1, 3, 4]}]
"""


# A user's CNN with a symbolic batch dimension (scripts/export_forms.py
# cnn_dynamic) whose load triples at 50 ms.
CNN_WORKLOAD = """config: default
duration_ms: 120
seed: 1
batching: fixed
scheduling: dynamic
max_batch: 8
max_queue_delay_ms: 0.2
streams:
  - name: cnn
    model: cnn_dynamic.onnx
    slo_ms: 5
    arrival: {poisson: {rate: 20000, drift: [{at_ms: 50, rate: 60000}]}}
"""


def write_form(folder, name):
    """scripts/export_forms.py's form `name`, quantized, into `folder`."""
    import onnx

    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import export_forms

    fm = getattr(export_forms, name)(1)
    m = export_forms.quantize(fm, 1, 17, 8, export_forms.example_shape(name, fm.graph.input[0]))
    path = os.path.join(folder, name + ".onnx")
    onnx.save(m, path)
    return path


# A progress line (host/cli/progress.cc): "loom: tune W on tlm: 40% after 5 s, about 8 s left" or "... done after 6 s".
PROGRESS_LINE = re.compile(r"^loom: \w+ .*: (\d+% after \d+ s\b.*|done after \d+ s)$")


def run(args, cwd):
    return subprocess.run([LOOM] + args, cwd=cwd, capture_output=True, text=True, timeout=100)


class Tune(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loom_tune_")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.wl = os.path.join(self.dir, "w_workload.yaml")
        with open(self.wl, "w") as f:
            f.write(WORKLOAD)

    def tune(self, *extra, gangs=False):
        # Tests about the loop itself run with one core a batch (36 choices
        # instead of 216: a sixth of the compile time, which matters under
        # ASan); test_placement asks for the gangs.
        out = os.path.join(self.dir, "r%d.json" % len(os.listdir(self.dir)))
        extra = list(extra) + ([] if gangs or "--max-cores-per-batch" in extra else ["--max-cores-per-batch", "1"])
        r = run(["tune", self.wl, "--backend", "tlm", "--json", "-o", out] + extra, self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(out) as f:
            text = f.read()
        # --json -o: the report on stdout and in the file, byte for byte; the
        # file named on stderr.
        self.assertEqual(r.stdout, text)
        self.assertIn("loom tune: wrote " + out + "\n", r.stderr)
        self.stderr = r.stderr
        return text, json.loads(text)

    def test_swap_accounting(self):
        _, j = self.tune("--rounds", "2")
        self.assertEqual(j["kind"], "tune")
        self.assertEqual(len(j["rounds"]), 2)
        self.assertTrue(j["swap_ok"])
        # The same arrivals with and without the swap: every round serves
        # exactly the baseline's requests, none lost or reordered.
        n = j["baseline"]["latency"]["requests"]
        self.assertGreater(n, 20)
        for rd in j["rounds"]:
            sw = rd["swap"]
            self.assertEqual(sw["submitted"], sw["completed"] + sw["dropped"])
            self.assertEqual(sw["lost"], 0)
            self.assertEqual(sw["reordered_within_stream"], 0)
            self.assertEqual(sw["completed"], n)
            self.assertGreater(sw["dispatched_after_swap"], 0)
            self.assertLess(sw["dispatched_after_swap"], sw["completed"])
            self.assertEqual(rd["latency"]["requests"], n)
        # The offline re-compile serves the same requests too.
        self.assertEqual(j["offline_recompile"]["latency"]["requests"], n)
        # The drift makes the initial (short-shape) mapping worse than the
        # best per shape, and round 1 changes decisions with reasons.
        self.assertGreater(j["target"]["gap_us"], 0)
        r1 = j["rounds"][0]
        self.assertGreater(len(r1["decisions_changed"]), 0)
        for d in r1["decisions_changed"]:
            self.assertNotEqual(d["from"], d["to"])
            self.assertLess(d["predicted_to_cycles"], d["predicted_from_cycles"])
        self.assertLess(r1["after_swap"]["mean_us"], j["baseline"]["after_swap"]["mean_us"])

    def test_report_draws_a_tune_result(self):
        text, _ = self.tune("--rounds", "1")
        res = os.path.join(self.dir, "tune.json")
        with open(res, "w") as f:
            f.write(text)
        out = os.path.join(self.dir, "report")
        r = run(["report", res, "-o", out], self.dir)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(os.path.join(out, "index.html")) as f:
            html = f.read()
        self.assertIn("<img", html)
        self.assertTrue(any(n.endswith(".png") for n in os.listdir(out)))
        # Per-core timelines before/after: batches of the window after the swap,
        # on real cores, none overlapping on a core.
        self.assertIn("tune_timelines.png", os.listdir(out))
        # Prediction error per bucket as a trend over the rounds, and each
        # round's compiler decisions (changed, or said to be unchanged).
        self.assertIn("tune_prediction_error_trend.png", os.listdir(out))
        self.assertIn("round 1 compiler decisions", html)
        # The gain split between re-compiling and the refit, the counters of
        # every measured plan beside the predictions, and each batch's layers.
        self.assertIn("attribution (after the swap point)", html)
        self.assertIn("counters of the measured plans", html)
        self.assertIn("compile profile and telemetry of the deployed plans", html)
        # The retuning actions, with exactly one point to roll back to.
        self.assertIn("retuning actions", html)
        self.assertEqual(html.count("(lowest measured p99)"), 1)
        # Memo, then the facts, then the charts, then the per-plan tables,
        # each plan collapsed under a line: the charts come before any long
        # table, at any model size.
        charts, details = html.index("<h2>Charts</h2>"), html.index("<h2>Details</h2>")
        self.assertLess(html.index("Decision:"), charts)
        self.assertLess(charts, details)
        self.assertLess(html[:charts].count("<tr>"), 40)
        self.assertLess(details, html.index("compile profile and telemetry of the deployed plans"))
        self.assertGreater(html[details:].count("<details><summary>"), 2)
        j = json.loads(text)
        # The fields the batch size per bucket and the batch cap added are
        # checked before the report draws them: a damaged one is one line.
        self.assertIn("with_batch_cap", j["offline_recompile"])
        for damage, where in ((lambda d: d["rounds"][0]["attribution"].update(batch_cap_us="x"), "batch_cap_us"),
                              (lambda d: d["offline_recompile"].update(with_batch_cap={"after_swap": 1}),
                               "with_batch_cap.after_swap")):
            bad = json.loads(text)
            damage(bad)
            with open(res, "w") as f:
                json.dump(bad, f)
            r = run(["report", res, "-o", os.path.join(self.dir, "bad_report")], self.dir)
            self.assertNotEqual(r.returncode, 0)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(where, r.stderr)
            self.assertNotIn("Traceback", r.stderr)
        for tl in (j["baseline"]["timeline"], j["rounds"][-1]["timeline"]):
            self.assertTrue(tl)
            by_core = {}
            for b in tl:
                self.assertLess(b["start_us"], b["end_us"])
                self.assertTrue(b["layers"])
                self.assertAlmostEqual(b["layers"][0][1], b["start_us"], delta=1e-6 * b["end_us"])
                self.assertAlmostEqual(b["layers"][-1][2], b["end_us"], delta=1e-6 * b["end_us"])
                by_core.setdefault(b["core"], []).append((b["start_us"], b["end_us"]))
            for iv in by_core.values():
                iv.sort()
                for (_, e0), (s1, _) in zip(iv, iv[1:]):
                    self.assertLessEqual(e0, s1 + 1e-6)

    def test_bert_buckets(self):
        # The zoo BERT with sequence lengths drifting from short to long: one
        # plan per bucket (a zoo length), the buckets chosen by the loop.
        wl = os.path.join(self.dir, "bert_workload.yaml")
        with open(wl, "w") as f:
            f.write(BERT_WORKLOAD)
        # The six zoo lengths are built once, two at a time, into the zoo
        # folder both runs' caches share (where `loom tune --cache` builds
        # them on first use). The two runs are independent and each measures
        # its whole decision space itself, so they run side by side; each has
        # its own service-time cache, so neither reads what the other measured.
        zoo = os.path.join(self.dir, "zoo")
        os.mkdir(zoo)
        lens = (32, 64, 128, 256, 384, 512)

        def build(n):
            return subprocess.run([LOOM, "zoo", "build", "bert", "--seq", str(n), "--seed", "1",
                                   "-o", os.path.join(zoo, "bert-seq%d" % n)], capture_output=True, text=True,
                                  timeout=300)

        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for n, r in zip(lens, pool.map(build, lens)):
                self.assertEqual(r.returncode, 0, "zoo build bert --seq %d: %s" % (n, r.stderr))

        def tune(k):
            cache = os.path.join(self.dir, "cache%d" % k)
            os.mkdir(cache)
            os.symlink(zoo, os.path.join(cache, "zoo"))
            out = os.path.join(self.dir, "bert%d.json" % k)
            # The two-bucket run weighs one core a batch only (24 choices, not
            # 216): the bucket limit is what it checks, placement the other's.
            narrow = ["--max-cores-per-batch", "1"] if k == 2 else []
            r = subprocess.run([LOOM, "tune", wl, "--backend", "tlm", "--cache", cache, "--max-buckets", str(k),
                                "--rounds", "2", "-o", out] + narrow, cwd=self.dir, capture_output=True, text=True,
                               timeout=600)
            return out, r

        results = {}
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for k, (out, r) in zip((3, 2), pool.map(tune, (3, 2))):
                self.assertEqual(r.returncode, 0, r.stderr)
                self.assertIn("from re-compiling (offline model)", r.stdout)
                with open(out) as f:
                    results[k] = json.load(f)
        for k, j in results.items():
            self.assertTrue(j["swap_ok"])
            self.assertEqual(j["max_buckets"], k)
            # 6 lengths x fusion x double buffering x placement (1 core; 2 and 4
            # cores static, pipeline, dynamic x1, dynamic x2); one core: 24.
            widths = [1, 2, 4] if k == 3 else [1]
            self.assertEqual(len(j["decision_space"]), 24 * 9 if k == 3 else 24)
            self.assertEqual(j["max_cores_per_batch"], widths[-1])
            maps = [j["initial_mapping"]["zoo:bert"], j["best_per_shape"]["mapping"]["zoo:bert"],
                    j["offline_recompile"]["mapping"]["zoo:bert"]] + [r["mapping"]["zoo:bert"] for r in j["rounds"]]
            for m in maps:
                seqs = [b["seq"] for b in m["buckets"]]
                # One program per bucket and number of requests a run holds.
                self.assertEqual(m["plans"], len({(b["seq"], r) for b in m["buckets"] for r in b["requests_per_run"]}))
                self.assertLessEqual(len(seqs), k)
                self.assertEqual(seqs, sorted(seqs))
                self.assertTrue(all(s in lens for s in seqs))
                self.assertEqual(seqs[-1], 512)  # every length has a bucket
                for b in m["buckets"]:
                    self.assertTrue(b["choice"].startswith("rows=%d," % b["seq"]), b)
                self.assertGreaterEqual(m["padding"], 0)
                self.assertLess(m["padding"], 1)
            # Placement: every map weighed 1, 2 and 4 cores per batch and
            # took the fewest cores within 1 % of the lowest modelled latency
            # (with attention and GELU on the fabric a long request's host
            # part no longer dwarfs its device part, so a gang may pay).
            for m in maps:
                pl = m["placements"]
                self.assertEqual([x["cores"] for x in pl], widths)
                self.assertEqual(sum(x["chosen"] for x in pl), 1)
                lat = [x["modelled_latency_us"] for x in pl if x["modelled_latency_us"] != "overloaded"]
                self.assertTrue(lat)
                fit = [x["cores"] for x in pl if x["modelled_latency_us"] != "overloaded"
                       and x["modelled_latency_us"] <= min(lat) * 1.01]
                self.assertEqual(m["cores"], min(fit))
                self.assertTrue(all(("cores=%d," % m["cores"]) in b["choice"] if m["cores"] > 1
                                    else "cores=" not in b["choice"] for b in m["buckets"]), m)
            init, best = maps[0], maps[1]
            # The initial buckets fit the short mix; after the drift the
            # oracle's buckets pad less, and the loop recovers the gap.
            self.assertLess(best["padding"], 0.5)
            self.assertNotEqual([b["seq"] for b in init["buckets"]], [b["seq"] for b in best["buckets"]])
            self.assertGreater(j["target"]["gap_us"], 0)
            r1 = j["rounds"][0]
            self.assertGreater(len(r1["decisions_changed"]), 0)
            self.assertLess(r1["after_swap"]["mean_us"], j["baseline"]["after_swap"]["mean_us"])
            for r in j["rounds"]:
                a = r["attribution"]
                self.assertAlmostEqual(a["gain_us"], a["offline_recompile_us"] + a["batch_cap_us"] + a["refit_us"],
                                       delta=1e-6 * abs(a["gain_us"]) + 1e-6)
                self.assertAlmostEqual(a["gain_us"], j["baseline"]["after_swap"]["mean_us"] - r["after_swap"]["mean_us"],
                                       delta=1e-6 * abs(a["gain_us"]) + 1e-6)
                # Per-layer telemetry per (kind, bucket) from the program's segments.
                self.assertTrue(r["prediction_error"])
                self.assertTrue(all(e["rows"] in lens for e in r["prediction_error"]))
            # The fabric's counters of every measured plan beside the
            # compiler's predictions: MACs exact, traffic within 1 %.
            ctr = j["rounds"][-1]["counters"]
            self.assertEqual(len(ctr), j["rounds"][-1]["plans_measured"])
            for c in ctr:
                self.assertGreater(c["measured"]["macs"], 0)
                self.assertEqual(c["measured"]["macs"], c["predicted"]["macs"], c["choice"])
                self.assertLess(abs(c["error"]["bytes_rd"]), 0.01, c)
                self.assertLess(abs(c["error"]["bytes_wr"]), 0.01, c)
                self.assertGreater(c["compute_share"], 0)
                self.assertLessEqual(c["compute_share"], 1)
            # The deployed plans' compile profile: every layer predicted and measured.
            # One per bucket and number of requests a run (requests_per_run).
            prof = j["rounds"][-1]["profile"]
            last = j["rounds"][-1]["mapping"]["zoo:bert"]
            self.assertEqual(len(prof), last["plans"])
            self.assertTrue({b["choice"] for b in last["buckets"]} <= {p["choice"] for p in prof})
            for p in prof:
                self.assertTrue(any(p["choice"].startswith("rows=%d," % b["seq"]) for b in last["buckets"]), p)
            for p in prof:
                self.assertTrue(p["layers"])
                for l in p["layers"]:
                    self.assertGreater(l["predicted"], 0)
                    self.assertGreater(l["measured"], 0)
                    self.assertLess(abs(l["predicted"] - l["measured"]) / l["measured"], 0.5, l)
            # Per-core timelines with layer names, the layers tiling each batch.
            tl = j["rounds"][-1]["timeline"]
            self.assertTrue(tl)
            names = set()
            for b in tl:
                self.assertIn("layers", b)
                t = b["start_us"]
                for name, s0, s1 in b["layers"]:
                    self.assertAlmostEqual(s0, t, delta=1e-6 * max(1.0, abs(t)))
                    self.assertGreaterEqual(s1, s0)
                    names.add(name)
                    t = s1
                self.assertAlmostEqual(t, b["end_us"], delta=1e-6 * max(1.0, abs(t)))
            self.assertIn("host ops", names)
            self.assertTrue(any(n.startswith("matmul") for n in names), names)
        # One bucket fewer cannot predict less work per request for the same lengths.
        self.assertGreaterEqual(results[2]["offline_recompile"]["mapping"]["zoo:bert"]["expected_cycles_per_request"],
                                results[3]["offline_recompile"]["mapping"]["zoo:bert"]["expected_cycles_per_request"] * 0.99)

    def test_placement(self):
        # The gemm chain at a light load: every mapping weighs 1, 2 and 4
        # cores per batch by the queue model; the measured gang is faster
        # than one core, so it is chosen, served as a gang (gang_batches,
        # one timeline span per core), and beats the one-core loop.
        _, j = self.tune("--rounds", "1", gangs=True)
        _, one = self.tune("--rounds", "1", "--max-cores-per-batch", "1")
        self.assertEqual(len(j["decision_space"]), 6 * 2 * 2 * 9)
        self.assertEqual(len(one["decision_space"]), 6 * 2 * 2)
        key = "gemm_chain(h=32,f=64,l=1)"
        best = j["best_per_shape"]["mapping"][key]["placements"]
        self.assertEqual([x["cores"] for x in best], [1, 2, 4])
        chosen = [x for x in best if x["chosen"]][0]
        self.assertGreater(chosen["cores"], 1)
        self.assertLess(chosen["service_us"], best[0]["service_us"])
        for x in best:
            if x["chosen"] or x["modelled_latency_us"] == "overloaded":
                continue
            self.assertLessEqual(chosen["modelled_latency_us"], x["modelled_latency_us"])
        tl = j["rounds"][-1]["timeline"]
        gang = [b for b in tl if b["cores"] > 1]
        self.assertTrue(gang)
        for b in gang:  # the same batch on as many cores, at the same times
            same = [o for o in tl if o["start_us"] == b["start_us"] and o["stream"] == b["stream"]]
            self.assertEqual(len({o["core"] for o in same}), b["cores"])
        self.assertTrue(j["swap_ok"])
        self.assertLess(j["rounds"][-1]["after_swap"]["mean_us"], one["rounds"][-1]["after_swap"]["mean_us"])
        for rd in one["rounds"]:
            for d in rd["decisions_changed"]:
                self.assertNotIn("cores=", d["to"])

    def test_determinism(self):
        a, _ = self.tune("--rounds", "1", "--seed", "5")
        b, _ = self.tune("--rounds", "1", "--seed", "5")
        c, _ = self.tune("--rounds", "1", "--seed", "6")
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)

    def test_progress_with_eta_on_stderr(self):
        out = os.path.join(self.dir, "p.json")
        r = subprocess.run([LOOM, "tune", self.wl, "--backend", "tlm", "--rounds", "2", "--json", "--progress",
                            "--max-cores-per-batch", "1"],
                           cwd=self.dir, capture_output=True, text=True, timeout=100,
                           env=dict(os.environ, LOOM_PROGRESS_INTERVAL="0"))
        self.assertEqual(r.returncode, 0, r.stderr)
        json.loads(r.stdout)  # the result alone on stdout
        lines = [l for l in r.stderr.splitlines() if l.startswith("loom: tune ")]
        pct = [int(l.split(": ")[2].split("%")[0]) for l in lines if "left" in l]
        self.assertEqual(pct, sorted(pct), "progress goes backwards")
        self.assertGreaterEqual(pct[-1], 95)
        for phase in ("(serving with the initial mapping)", "(round 1 of 2:", "(round 2 of 2:"):
            self.assertTrue(any(phase in l for l in lines), phase + " missing from: " + r.stderr[-2000:])
        self.assertIn("done after", lines[-1])
        del out

    def test_cost_params(self):
        # `loom tune --cost-params-out` writes the refitted parameters;
        # `loom compile --cost-params` reads them. Without the flag (or with
        # parameters that correct nothing) the plan is byte-identical.
        params = os.path.join(self.dir, "cost_params.json")
        _, j = self.tune("--rounds", "1", "--cost-params-out", params)
        self.assertIn("loom tune: wrote " + params + "\n", self.stderr)
        with open(params) as f:
            cp = json.load(f)
        self.assertEqual(cp, j["cost_params"])
        self.assertEqual(cp["kind"], "loom-cost-params")
        self.assertEqual(cp["config"], "default")
        self.assertEqual(cp["layer_cycles"], j["rounds"][0]["cost_params"]["layer_cycles"])
        r1 = j["rounds"][0]
        self.assertEqual(r1["compiler_plans_compared"], len(j["decision_space"]))
        for rd in j["rounds"]:
            for d in rd["plans_recompiled"]:
                self.assertEqual(d["from"].split(",cost=")[0], d["to"].split(",cost=")[0])
                self.assertNotEqual(d["from"], d["to"])
        for d in r1["compiler_decisions_changed"]:
            self.assertNotEqual(d["before"], d["after"])
            self.assertIn(d["pass"], ("fuse-activation", "fuse-residual", "tiling"))
        graph = os.path.join(ROOT, "examples", "demo_cnn.json")

        def without_options(b):
            # The plan container (docs/plan-format.md): 40-byte header, then
            # the metadata JSON, then the payload. A program file's payload
            # holds its segments' plans, each recording the options too.
            meta_len = struct.unpack_from("<Q", b, 16)[0]
            meta = json.loads(b[40:40 + meta_len])
            del meta["compile_options"]
            payload = b[40 + meta_len:]
            if "segments" not in meta:
                return meta, payload
            at = meta.get("host", {}).get("bytes", 0)
            segments = []
            for s in meta["segments"]:
                n = s.pop("plan_bytes")  # the options' length is in it
                segments.append(without_options(payload[at:at + n]))
                at += n
            return meta, segments

        def compile_plan(name, *extra, cfg="default"):
            out = os.path.join(self.dir, name)
            r = run(["compile", graph, "--config", cfg, "-o", out] + list(extra), self.dir)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out, "rb") as f:
                return f.read()

        plain = compile_plan("plain.plan")
        self.assertEqual(plain, compile_plan("plain2.plan"))
        compile_plan("refit.plan", "--cost-params", params)
        zero = os.path.join(self.dir, "zero.json")
        with open(zero, "w") as f:
            json.dump({"kind": "loom-cost-params", "version": 1, "config": "default"}, f)
        # The same plan but for the options it records (compile_options
        # names the parameters it was compiled with).
        self.assertEqual(without_options(plain), without_options(compile_plan("zero.plan", "--cost-params", zero)))
        self.assertNotEqual(plain, compile_plan("zero2.plan", "--cost-params", zero))
        # A file that changes a decision changes the plan: with a large
        # negative per-layer term every layer predicts 0 cycles (clamped), so
        # the tiling passes keep their first candidates.
        neg = os.path.join(self.dir, "neg.json")
        with open(neg, "w") as f:
            json.dump({"kind": "loom-cost-params", "version": 1, "config": "default", "layer_cycles": -1e6}, f)
        self.assertNotEqual(plain, compile_plan("neg.plan", "--cost-params", neg))
        r = run(["compile", graph, "--config", "default", "-o", os.path.join(self.dir, "x.plan"), "--explain",
                 "--cost-params", neg], self.dir)
        self.assertIn("predicted 0 cycles (fusion cost", r.stdout)
        # Golden: a per-instruction term moves the pointwise conv's tile on
        # tiny to a larger one (fewer tiles, fewer instructions). With
        # --fusion none the conv is tiled alone (its residual add is not
        # folded into it), so the line is about its tiling only.
        ins = os.path.join(self.dir, "insn.json")
        with open(ins, "w") as f:
            json.dump({"kind": "loom-cost-params", "version": 1, "config": "tiny", "insn_cycles": 5}, f)

        def pw4(*extra):
            r = run(["compile", graph, "--config", "tiny", "-o", os.path.join(self.dir, "t.plan"), "--explain",
                     "--fusion", "none"] + list(extra), self.dir)
            self.assertEqual(r.returncode, 0, r.stderr)
            line = [x for x in r.stdout.splitlines() if x.startswith("[tiling] pw4:")]
            self.assertEqual(len(line), 1, r.stdout)
            return line[0].split(";")[0]

        self.assertEqual(pw4(), "[tiling] pw4: M=64 K=32 N=32: tm=16 tn=16 tk=32 (1 K steps)")
        self.assertEqual(pw4("--cost-params", ins), "[tiling] pw4: M=64 K=32 N=32: tm=16 tn=32 tk=32 (1 K steps)")
        # Bad files: one line naming the file, non-zero exit, no plan.
        bad = os.path.join(self.dir, "bad.json")
        for text, needle in (("{", "not valid JSON"), ('{"kind": "loom-cost-params", "version": 1, "config": "tiny"}',
                                                        "fitted for 'tiny'"),
                             ('{"kind": "loom-cost-params", "version": 1, "config": "default", "latency": "x"}',
                              "'latency'")):
            with open(bad, "w") as f:
                f.write(text)
            out = os.path.join(self.dir, "bad.plan")
            r = run(["compile", graph, "--config", "default", "-o", out, "--cost-params", bad], self.dir)
            self.assertNotEqual(r.returncode, 0, text)
            lines = r.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn("bad.json", lines[0])
            self.assertIn(needle, lines[0])
            self.assertFalse(os.path.exists(out))
        r = run(["compile", graph, "-o", os.path.join(self.dir, "m.plan"), "--cost-params",
                 os.path.join(self.dir, "missing.json")], self.dir)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("missing.json", r.stderr)

    def tune_form(self, form, workload):
        """`loom tune` one round over export form `form` (written to the test
        folder) served by `workload`; the report and the model's key."""
        write_form(self.dir, form)
        self.wl = os.path.join(self.dir, form + "_workload.yaml")
        with open(self.wl, "w") as f:
            f.write(workload)
        _, j = self.tune("--rounds", "1")
        return j, os.path.join(self.dir, form + ".onnx")

    def test_onnx_buckets(self):
        # A user's ONNX file: its free symbol 'seq' is what seq_len binds, the
        # buckets come from the ladder between the shortest and the longest
        # request's buckets, and the loop moves them with the drift.
        j, key = self.tune_form("encoder_dynamic", ENCODER_WORKLOAD)
        ladder = [12, 16, 24, 32, 48, 64]
        self.assertEqual(j["bucket_lengths"], ladder)
        self.assertEqual(len(j["decision_space"]), 4 * len(ladder))  # one core a batch
        self.assertTrue(j["swap_ok"])
        first = [b["seq"] for b in j["initial_mapping"][key]["buckets"]]
        last = [b["seq"] for b in j["rounds"][-1]["mapping"][key]["buckets"]]
        for seqs in (first, last):
            self.assertTrue(set(seqs) <= set(ladder), seqs)
            self.assertEqual(seqs[-1], 64)  # the longest request has a bucket
        # The initial mix is short, the drifted one long: the buckets move up.
        self.assertNotEqual(first, last)
        self.assertGreater(sum(last), sum(first))
        self.assertTrue(j["target"]["met"], j["target"])
        self.assertGreaterEqual(j["rounds"][-1]["gap_recovered_mean"], 0.8)
        # A batch size per bucket: each bucket runs a batch of b (1..max_batch 4)
        # as ceil(b / r) runs of its program for r requests, r of 1, 2 and 4;
        # one program per bucket and r.
        for m in [j["initial_mapping"][key], j["rounds"][-1]["mapping"][key]]:
            plans = set()
            for b in m["buckets"]:
                self.assertEqual(len(b["requests_per_run"]), 4, b)
                self.assertTrue(set(b["requests_per_run"]) <= {1, 2, 4}, b)
                self.assertEqual(b["requests_per_run"][0], 1, b)
                plans |= {(b["seq"], r) for r in b["requests_per_run"]}
            self.assertEqual(m["plans"], len(plans))
        # A damaged requests_per_run is one line of `loom report`, never a traceback.
        bad = json.loads(json.dumps(j))
        bad["rounds"][-1]["mapping"][key]["buckets"][0]["requests_per_run"] = [1, "two"]
        res = os.path.join(self.dir, "bad_buckets.json")
        with open(res, "w") as f:
            json.dump(bad, f)
        r = run(["report", res, "-o", os.path.join(self.dir, "bad_report")], self.dir)
        self.assertNotEqual(r.returncode, 0)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
        self.assertIn("requests_per_run[1]", r.stderr)
        # Every batch after the swap runs as many runs of its bucket's program
        # as its requests need: the timeline's steps are one run's, repeated.
        last_map = {b["seq"]: b["requests_per_run"] for b in j["rounds"][-1]["mapping"][key]["buckets"]}
        one_run = {}
        spans = [x for x in j["rounds"][-1]["timeline"] if x["layers"] and x["start_us"] >= j["swap_at_ms"] * 1000]
        self.assertTrue(spans)
        for x in spans:
            bucket = min(s for s in last_map if s >= x["seq"])
            r = last_map[bucket][x["requests"] - 1]
            runs = -(-x["requests"] // r)
            names = [n for n, _, _ in x["layers"]]
            self.assertEqual(len(names) % runs, 0, x)
            step = names[:len(names) // runs]
            self.assertEqual(names, step * runs, x)
            self.assertEqual(one_run.setdefault((bucket, r), step), step, x)
        # Refusals: seq_len naming the batch dimension, a bucket no request
        # can use, a length the model cannot be built at.
        bad = os.path.join(self.dir, "bad_workload.yaml")
        for text, args, needle in [
            (ENCODER_WORKLOAD.replace("    seq_len:\n", "    seq_len:\n      dim: batch\n"), [],
             "'batch' is not a free symbolic dimension"),
            (ENCODER_WORKLOAD, ["--bucket-lengths", "64,5000"], "'5000' is not a length of"),
            (ENCODER_WORKLOAD, ["--bucket-lengths", "16,48"], "longest request of stream 'encoder' (60)"),
        ]:
            with open(bad, "w") as f:
                f.write(text)
            r = run(["tune", bad, "--backend", "tlm"] + args, self.dir)
            self.assertNotEqual(r.returncode, 0, args)
            lines = [ln for ln in r.stderr.strip().splitlines() if not PROGRESS_LINE.match(ln)]
            self.assertEqual(len(lines), 1, r.stderr)
            self.assertIn(needle, lines[0])

    def test_cnn_load(self):
        # A CNN whose load triples: the initial mapping, decided for the light
        # load, runs every batch one request at a time; the loop re-decides
        # the requests per run for the batches observed after the drift.
        j, key = self.tune_form("cnn_dynamic", CNN_WORKLOAD)
        self.assertEqual(j["swap_at_ms"], 50)  # the first rate change
        # Requests per run 1, 2, 4, 8 x fusion x double buffering, one core.
        self.assertEqual(sorted({int(c.split(",")[0][5:]) for c in j["decision_space"]}), [1, 2, 4, 8])
        self.assertEqual(len(j["decision_space"]), 16)
        self.assertTrue(j["initial_mapping"][key]["choice"].startswith("rows=1,"))
        changed = j["rounds"][0]["decisions_changed"]
        self.assertTrue(changed)
        for d in changed:  # each a batch of b now runs in fewer, larger runs
            rows = int(d["to"].split(",")[0][5:])
            self.assertGreater(rows, 1, d)
            self.assertLess(-(-d["batch"] // rows), d["batch"], d)
        base, tuned = j["baseline"]["after_swap"], j["rounds"][0]["after_swap"]
        self.assertEqual(base["requests"], tuned["requests"])  # the same offered load
        self.assertLess(tuned["p99_us"], base["p99_us"])
        self.assertTrue(j["swap_ok"])
        # The batch cap: each of 1, 2, 4 and max_batch 8 tried in a simulated
        # run under another arrival seed; the chosen one has the lowest p99 of
        # those that complete the most requests (within 1 %), and the round's
        # batches after the swap point hold no more requests than it.
        self.assertEqual(j["batch_cap"], "decide")
        cap = j["rounds"][0]["mapping"][key]["batch_cap"]
        self.assertIn("seed %d" % (j["seed"] + 1), cap["rule"])
        tried = cap["tried"]
        self.assertEqual([t["cap"] for t in tried], [1, 2, 4, 8])
        most = max(t["completed"] for t in tried)
        fit = [t for t in tried if t["completed"] >= 0.99 * most]
        self.assertEqual(cap["chosen"], min(fit, key=lambda t: (t["p99_us"], t["cap"]))["cap"])
        self.assertEqual(sum(t["chosen"] for t in tried), 1)
        self.assertEqual([c["to"] for c in j["rounds"][0]["batch_caps_changed"]],
                         [] if cap["chosen"] == 8 else ["batch cap %d" % cap["chosen"]])
        after = [x for x in j["rounds"][0]["timeline"] if x["start_us"] >= j["swap_at_ms"] * 1000]
        self.assertTrue(after)
        self.assertLessEqual(max(x["requests"] for x in after), cap["chosen"])
        # --batch-cap workload: the workload's max_batch throughout, nothing tried.
        _, w = self.tune("--rounds", "1", "--batch-cap", "workload")
        self.assertEqual(w["batch_cap"], "workload")
        self.assertNotIn("batch_cap", w["rounds"][0]["mapping"].get(key, {}))

    def test_bad_input(self):
        bert = os.path.join(self.dir, "bert_workload.yaml")
        with open(bert, "w") as f:
            f.write(BERT_WORKLOAD)
        graph = os.path.join(self.dir, "g_workload.yaml")
        with open(graph, "w") as f:
            f.write(WORKLOAD.replace("model: gemm_chain", "model: %s" %
                                     os.path.join(ROOT, "examples", "demo_cnn.json"), 1))
        early = os.path.join(self.dir, "early_workload.yaml")
        with open(early, "w") as f:  # three requests a stream, all before the swap point
            f.write(WORKLOAD.replace("    slo_ms: 50\n", "    slo_ms: 50\n    requests: 3\n"))
        cases = [
            (["tune", os.path.join(self.dir, "missing.yaml")], "missing.yaml"),
            (["tune", early, "--swap-at-ms", "25"], "completes after the swap point (25 ms)"),
            (["tune", self.wl, "--rounds", "0"], "--rounds"),
            (["tune", self.wl, "--max-buckets", "0"], "--max-buckets"),
            (["tune", self.wl, "--max-buckets", "9"], "--max-buckets"),
            (["tune", self.wl, "--max-cores-per-batch", "0"], "--max-cores-per-batch"),
            (["tune", self.wl, "--max-cores-per-batch", "5"], "config 'default' has 4 cores"),
            (["tune", self.wl, "--cache", self.wl], "is not a folder"),
            (["tune", bert, "--bucket-lengths", "32,33,512"], "'33' is not a length of zoo:bert (32, 64, 128, 256, 384, 512)"),
            (["tune", bert, "--bucket-lengths", "64,64,512"], "given twice"),
            (["tune", bert, "--bucket-lengths", "32,256"], "longest request of stream 'bert' (450)"),
            (["tune", self.wl, "--backend", "ref"], "ref"),
            (["tune", self.wl, "--swap-at-ms", "500"], "--swap-at-ms"),
            (["tune", self.wl, "--swap-at-ms", "-5"], "--swap-at-ms: expected a time in ms >= 0"),
            (["tune", self.wl, "--swap-at-ms", "nan"], "--swap-at-ms: expected a time in ms >= 0"),
            (["tune", self.wl, "--swap-at-ms", "inf"], "--swap-at-ms: expected a time in ms >= 0"),
            (["tune", self.wl, "--swap-at-ms", "-1e300"], "--swap-at-ms: expected a time in ms >= 0"),
            # Values that once stood for "not given": now checked as any other.
            (["tune", self.wl, "--seed", "-5"], "--seed: must be >= 0, got -5"),
            (["tune", self.wl, "--max-cores-per-batch", "-1"], "--max-cores-per-batch: must be >= 1, got -1"),
            (["tune", graph], "gemm_chain"),
            (["tune", self.wl, "--backend", "nosuch"], "nosuch"),
            (["tune", self.wl, "--cost-params-out", os.path.join(self.dir, "no", "cp.json")], "--cost-params-out"),
        ]
        for args, needle in cases:
            out = os.path.join(self.dir, "bad.json")
            r = run(args + ["-o", out], self.dir)
            self.assertNotEqual(r.returncode, 0, args)
            # One line says what is wrong; a run that fails only at its end
            # may have shown progress before it (a slow build, a busy machine).
            lines = [ln for ln in r.stderr.strip().splitlines() if not PROGRESS_LINE.match(ln)]
            self.assertEqual(len(lines), 1, (args, r.stderr))
            self.assertIn(needle, lines[0], args)
            self.assertFalse(os.path.exists(out), args)


if __name__ == "__main__":
    LOOM, ROOT = os.path.abspath(sys.argv[1]), sys.argv[2]
    name = sys.argv[3]
    suite = unittest.TestSuite([Tune(name)])
    sys.exit(0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1)
