#!/usr/bin/env python3
"""Regenerates the figure tables of docs/serving.md and docs/tuning.md from the
commands that measure them, or checks that the docs still hold what those
commands give.

Every generated table sits in its doc between two markers,

    <!-- table: NAME -->
    ...the command(s), written by this script from the registry below...
    ...the table...
    <!-- /table -->

and NAME has an entry in TABLES: the doc, the commands (run from the
repository root with the given loom binary, one at a time), and a renderer
from their results to the table's rows. Only the region between the markers
is generated; the prose beside it (dates, commits, interpretation) is not.

  doc_tables.py LOOM --list                  names, docs, commands
  doc_tables.py LOOM --write [--only NAME..] run the commands, rewrite the regions
  doc_tables.py LOOM --check [--only NAME..] run the commands, exit 1 naming each
                                             stale table and its first differing cell
  doc_tables.py --markers                    markers and registry agree (runs nothing)
      --reuse      render from the results an earlier run left in WORK; run nothing
      --work WORK  where outputs and the cache go (build/doc-tables)

Comparison: deterministic figures (simulated cycles and latencies with a seed,
counts) must be equal as written. A column that holds wall-clock figures is
declared in its entry's `tolerance` with a relative tolerance: its numbers may
differ from the doc's by that fraction of the doc's figure (every other
character of the cell must still match); in a table of rows, not columns, a
key `row: PREFIX` declares the rows whose first cell starts with PREFIX.
The declared tolerances are listed at the end of this help and by --list.

Outputs go to WORK/NAME (removed before each run), service times and zoo models to WORK/cache (kept: they are
keyed by the compiler version and every plan, so a rerun with a changed
compiler measures again). A doc is rewritten through a temporary file and a
rename, and only when every table asked for was generated; bad input (an
unknown name, a marker without its end, a failing command) is one line and
exit 1.
"""
import argparse
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
BEGIN = re.compile(r"^<!-- table: ([a-z0-9-]+) -->$")
END = "<!-- /table -->"
# How the commands are written in the docs: the work folder's default path, and
# `loom` for the binary (build/ci/bin/loom where a script takes it).
SHOWN_WORK = "build/doc-tables"


class Error(Exception):
    pass


class Table:
    """One generated table: `commands` (argument strings with {loom}, {out},
    {cache}), `render(out)` -> (header, rows[, align]) with rows as lists of
    cells and align an l or r per column,
    `tolerance` {column header: relative tolerance} for wall-clock columns,
    `skip` a reason the check cannot run it here (the region is then kept as
    written and reported as not checked)."""

    def __init__(self, name, doc, commands, render, tolerance=None, skip=None):
        self.name, self.doc, self.commands, self.render = name, doc, commands, render
        self.tolerance, self.skip = tolerance or {}, skip

    def argv(self, cmd, loom, work):
        out, cache = work / self.name, work / "cache"
        words = shlex.split(cmd)
        return [w.format(loom=loom, out=out, cache=cache) for w in words]

    def shown(self):
        lines = []
        for cmd in self.commands:
            words = shlex.split(cmd)
            shown = []
            for i, w in enumerate(words):
                loom = "loom" if i == 0 else "build/ci/bin/loom"
                shown.append(w.format(loom=loom, out=SHOWN_WORK + "/" + self.name, cache=SHOWN_WORK + "/cache"))
            lines += wrap([shlex.quote(w) for w in shown])
        return lines


def wrap(words, width=100):
    """A shell command over several lines (backslash continuations), an
    option kept on the line of its value."""
    units = []
    for w in words:
        if units and units[-1].startswith("-") and " " not in units[-1] and "=" not in units[-1] \
                and not w.startswith("-"):
            units[-1] += " " + w
        else:
            units.append(w)
    lines, cur = [], units[0]
    for w in units[1:]:
        if len(cur) + 1 + len(w) > width - 2:
            lines.append(cur + " \\")
            cur = "    " + w
        else:
            cur += " " + w
    return lines + [cur]


# ---------------------------------------------------------------- formatting


def pct(x, digits=0):
    return "%.*f %%" % (digits, 100.0 * x)


def load(path):
    with open(path) as f:
        return json.load(f)


# ---------------------------------------------------------- docs/serving.md


def render_batch_size(out):
    """The zoo batch sweep: per-request service time per batch size (each
    workload's `service_times.table`, over its points), and p50, p99 and SLO
    attainment per max_batch, means over the seeds."""
    sweep = out / "sweep"
    res = load(sweep / "results.json")
    names = {"resnet50": "ResNet-50", "mobilenetv2": "MobileNetV2", "bert": "BERT (seq 128)"}
    points = {}
    for p in res["runs"]:
        points.setdefault(workload_model(p["workload"]), []).append(p)
    rows = []
    for model in [m for m in names if m in points]:
        pts = points[model]
        per, slo = {}, None
        for p in pts:
            run = load(sweep / p["result"])
            slo = run["streams"][0]["slo_ms"]
            for t in run["service_times"]["table"]:
                per[t["batch"]] = t["us"] / t["batch"] / 1000.0
        batches = sorted({p["max_batch"] for p in pts})
        cols = {"p50": [], "p99": [], "slo": []}
        for b in batches:
            at = [p for p in pts if p["max_batch"] == b]
            cols["p50"].append("%.0f" % (sum(p["p50_us"] for p in at) / len(at) / 1000))
            cols["p99"].append("%.0f" % (sum(p["p99_us"] for p in at) / len(at) / 1000))
            cols["slo"].append("%.1f" % (100 * sum(p["slo_attainment"] for p in at) / len(at)))
        rows.append([
            names[model], " / ".join("%.2f" % per[b] for b in batches),
            "%.3f×" % (per[batches[0]] / per[batches[-1]]), " / ".join(cols["p50"]), " / ".join(cols["p99"]),
            "%s %% (%.0f ms)" % (" / ".join(cols["slo"]), slo)
        ])
    b = " / ".join(str(x) for x in batches)
    header = [
        "model", "per request on one core at batch %s (ms)" % b,
        "throughput per request, %d vs %d" % (batches[-1], batches[0]),
        "p50 at `max_batch` %s (ms)" % b, "p99 (ms)", "SLO attainment (SLO)"
    ]
    return header, rows


BUCKETS = ("{loom} tune examples/tune_bert_drift_workload.yaml --backend tlm --cache {cache} --seed 1 --rounds 2 "
           "--max-cores-per-batch 1 --max-buckets %d --json -o {out}/k%d.json")
BUCKET_COUNTS = (1, 2, 3, 4, 6)


def buckets_cell(m):
    return "%s (%.0f %%)" % (", ".join(str(b["seq"]) for b in m["buckets"]), 100 * m["padding"])


def render_bert_buckets(out):
    """The bucket count K of the BERT drift (seed 1, one core a batch, 2
    rounds): the initial and oracle bucket sets, the latency after the swap
    point of both and of round 2, and the compile time of round 2's plans."""
    rows = []
    kw = {"unit": "ms", "scale": 1000.0}
    for k in BUCKET_COUNTS:
        r = load(out / ("k%d.json" % k))
        base, best, last = r["baseline"]["after_swap"], r["best_per_shape"]["after_swap"], r["rounds"][-1]
        same = after(base, **kw) == after(best, **kw)
        gap = "same (no gap)" if same else "%s: %.0f %%" % (after(last["after_swap"], **kw),
                                                           100 * last["gap_recovered_mean"])
        rows.append([str(k), buckets_cell(r["initial_mapping"]["zoo:bert"]),
                     buckets_cell(r["best_per_shape"]["mapping"]["zoo:bert"]),
                     "%s → %s" % (after(base, **kw), "same" if same else after(best, **kw)), gap,
                     "%.0f ms" % last["mapping"]["zoo:bert"]["compile_ms"]])
    header = ["K", "initial buckets (padding)", "oracle buckets (padding)", "initial → oracle (mean / p99 after swap)",
              "round 2 (gap recovered, mean)", "compile of the deployed plans"]
    return header, rows


def render_bert_layer(out):
    """The zoo BERT layer stream as today's compiler maps it: host ops,
    device segments, service time (its host part) and latency."""
    r = load(out / "result.json")
    s = r["streams"][0]
    ms = lambda x: "%.1f ms" % (x / 1000.0)  # noqa: E731
    svc = [t["us"] for t in r["service_times"]["table"] if t["batch"] == 1][0]
    lat = s["latency"]
    row = ["today's compiler", str(s["fallback_ops"]), str(s["segments"]),
           "%s (%s)" % (ms(svc), ms(s["host_us_per_request"])), ms(lat["p50_us"]), ms(lat["p99_us"]),
           ms(lat["p999_us"])]
    header = ["mapping", "host ops", "segments", "service time (host part)", "p50", "p99", "p99.9"]
    return header, [row], "lrrlrrr"


def render_soak(out):
    """The live soak: accounting, checked runs, resident memory over the run
    (`live.rss_mib`) and at its peak, wall time (both from `time -v`), and
    each stream's p50 / p99 live against the simulator's."""
    live, sim = load(out / "soak.json"), load(out / "sim.json")
    lv = live["live"]
    timed = (out / "stderr.log").read_text()
    peak = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", timed).group(1)) / 1024.0
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)", timed)
    secs = int(wall.group(1) or 0) * 3600 + int(wall.group(2)) * 60 + float(wall.group(3))
    lost = live["submitted"] - live["completed"] - live["failed"] - live["dropped"]
    rss = [x["mib"] for x in lv["rss_mib"]]
    at = [rss[0], rss[len(rss) // 10], rss[len(rss) // 2], rss[-1]]
    if len({"%.2f" % x for x in at}) == 1:
        mem = "%.2f MiB at the first sample, at 10 %%, at 50 %% and at the last: **flat**" % at[0]
    else:
        mem = "%.2f MiB at the first sample, %.2f at 10 %%, %.2f at 50 %%, %.2f at the last" % tuple(at)
    checked = "each" if lv["checked_runs"] == lv["device_runs"] else "%s of them" % format(lv["checked_runs"], ",")
    tails = []
    for a, b in zip(sim["streams"], live["streams"]):
        p = "%.2f / %.2f" % (a["latency"]["p50_us"], a["latency"]["p99_us"])
        q = "%.2f / %.2f" % (b["latency"]["p50_us"], b["latency"]["p99_us"])
        tails.append("%s %s us %s" % (a["name"], p, "both") if p == q else "%s %s against %s us" % (a["name"], p, q))
    rows = [
        ["requests", "%s submitted = %s completed + %d failed + %d dropped: **%d lost**" %
         (format(live["submitted"], ","), format(live["completed"], ","), live["failed"], live["dropped"], lost)],
        ["device runs", "%s, %s checked against the golden model: %d differed, %d device errors" %
         (format(lv["device_runs"], ","), checked, lv["output_mismatches"], lv["device_errors"])],
        ["resident memory (`live.rss_mib`, %d samples, one per 1 %% of arrivals)" % len(rss), mem],
        ["peak resident memory (`time -v`, the whole process)", "%.1f MiB" % peak],
        ["wall time (`time -v`)", "%d min %02d s" % (secs // 60, secs % 60)],
        ["p50 / p99, simulator against live", "; ".join(tails)],
    ]
    return ["", ""], rows


VALIDATE_OWN = ["serve_bert", "serve_bursty", "serve_mix", "serve_zoo", "tune_drift", "serve_gang"]
VALIDATE_SMALL = ["serve_bert", "serve_bursty", "serve_mix", "tune_drift"]


def validate_cmd(names, tag, extra=""):
    return ("python3 scripts/serve_validate.py {loom} --cache {cache} %s--json {out}/%s.json " % (extra, tag) +
            " ".join("examples/%s_workload.yaml" % n for n in names))


def workload_config(name):
    m = re.search(r"^config:\s*(\S+)", (ROOT / "examples" / (name + "_workload.yaml")).read_text(), re.M)
    return m.group(1) if m else "default"


def render_validate(out):
    """The simulator's p50 and p99 against live execution on tlm, per stream:
    each workload on its own config, then on `small`."""

    def t(x):
        return "%.1f us" % x if x < 1000 else "%.3f ms" % (x / 1000)

    def e(x, bold=False):
        cell = "%+.2f %%" % (100 * x)
        return "**%s**" % cell if bold and abs(x) > 0.05 else cell

    rows = []
    for tag in ("own", "small"):
        for r in load(out / (tag + ".json")):
            name = r["workload"].replace("_workload.yaml", "")
            cfg = workload_config(name) if tag == "own" else "small"
            rows.append(["%s (%s)" % (name, cfg), r["stream"], str(r["requests"]), t(r["sim_p50_us"]),
                         t(r["live_p50_us"]), e(r["err_p50_us"]), t(r["sim_p99_us"]), t(r["live_p99_us"]),
                         e(r["err_p99_us"], True)])
    header = ["workload (config)", "stream", "requests", "p50 sim", "p50 live", "error", "p99 sim", "p99 live", "error"]
    return header, rows, "llrrrrrrr"


def bench_lines(out, prefix):
    """The lines `tests/serve/bench_serving.py` printed for one benchmark, as
    whitespace-separated words after the benchmark's name."""
    return [l.split()[1:] for l in (out / "stdout.log").read_text().splitlines() if l.startswith(prefix + ": ")]


def model_name(m):
    g = re.match(r"gemm_chain\(h=(\d+),f=(\d+),l=(\d+)\)$", m)
    if not g:
        return m
    h, f, l = g.groups()
    return "gemm_chain %s→%s→%s%s" % (h, f, h, " ×" + l if l != "1" else "")


def render_contention(out):
    """The stretch measured for a batch beside one of the same shape on its
    port, at four start phases (the rows where every co-runner has the
    batch's own sequence length and batch size)."""
    rows = []
    for w in bench_lines(out, "contention"):
        if w[0] == "config":
            continue
        config, model, seq, batch = w[:4]
        alone, stretch, worst = w[-3:]
        others = " ".join(w[6:-3]).split(", ")
        if any(o != "%s/%s" % (seq, batch) for o in others):
            continue
        rows.append([config, model_name(model), "–" if model.startswith("zoo:") else seq, batch, alone, stretch, worst])
    return ["config", "model", "seq", "batch", "alone µs", "stretch (mean of 4 phases)", "worst phase"], rows


def render_portlimit(out):
    """`max_per_port` 0 and 1 on the two-stream mix on `small`, the stretch
    measured, seeds 1 and 2 (seed 3 repeats seed 1: docs/serving.md's note on
    seeds)."""
    rows = []
    for w in bench_lines(out, "portlimit"):
        if w[0] != "measured" or w[2] not in ("1", "2"):
            continue
        load, seed, limit, rps, qa, wide, total, met, waits = w[1], w[2], w[3], w[4], w[5], w[7], w[9], w[10], w[11]
        met = "100 %" if float(met) >= 0.9995 else "%.1f %%" % (100 * float(met))
        rows.append([load, seed, limit, rps, "%s / %s / %s" % (qa, wide, total), met, waits])
    header = ["load", "seed", "`max_per_port`", "throughput req/s", "p99 qa / wide / all (ms)", "SLO met",
              "port-limit waits"]
    return header, rows


def render_stdout_table(out):
    """The first Markdown table a script printed (it renders the rows itself)."""
    lines = [l for l in (out / "stdout.log").read_text().splitlines() if l.startswith("|")]
    rows = parse_table(lines)
    if len(lines) < 2 or not rows:
        raise ValueError("no table on stdout")
    return rows[0], rows[1:], "".join("r" if c.endswith(":") else "l" for c in lines[1].strip("|").split("|"))


def workload_model(workload):
    return re.sub(r"^serve_batch_(.*)_workload\.yaml$", r"\1", os.path.basename(workload))


# ----------------------------------------------------------- docs/tuning.md


def after(x, unit="µs", scale=1.0, digits=1):
    return "%.*f / %.*f %s" % (digits, x["mean_us"] / scale, digits, x["p99_us"] / scale, unit)


def rounds_cell(r, **kw):
    cells = [after(rd["after_swap"], **kw) for rd in r["rounds"]]
    if len(set(cells)) == 1:
        return cells[0]
    return "; ".join(cells)


def gap_cell(r):
    last = r["rounds"][-1]
    gm, gp = last["gap_recovered_mean"], last["gap_recovered_p99"]
    first = next(rd["round"] for rd in r["rounds"]
                 if rd["gap_recovered_mean"] == gm and rd["gap_recovered_p99"] == gp)
    if gm is None or gp is None:
        return "no gap"
    if r["baseline"]["after_swap"]["p99_us"] == r["best_per_shape"]["after_swap"]["p99_us"]:
        return "%.0f %% (mean; no p99 gap) in round %d" % (100 * gm, first)
    if abs(gm - gp) < 5e-4:
        return "%.0f %% (mean and p99) in round %d" % (100 * gm, first)
    return "%.0f %% (mean), %.0f %% (p99) in round %d" % (100 * gm, 100 * gp, first)


DRIFT = "{loom} tune examples/tune_drift_workload.yaml --backend tlm --seed %d --json -o {out}/%s%d.json"
DRIFT1 = DRIFT.replace("--seed", "--max-cores-per-batch 1 --seed")
SEEDS = (1, 2, 3)


def render_drift(out):
    header = ["seed", "initial mapping (mean / p99 after swap)", "best per shape", "rounds 1, 2, 3", "gap recovered",
              "one core a batch, round 1 (below)"]
    rows = []
    for s in SEEDS:
        r, one = load(out / ("tune%d.json" % s)), load(out / ("tune1_%d.json" % s))
        rows.append([str(s), after(r["baseline"]["after_swap"]), after(r["best_per_shape"]["after_swap"]),
                     rounds_cell(r), gap_cell(r), after(one["rounds"][0]["after_swap"])])
    return header, rows


def render_drift_one_core(out):
    header = ["seed", "initial mapping (mean / p99 after swap)", "best per shape", "round 1", "rounds 2, 3",
              "gap recovered"]
    rows = []
    for s in SEEDS:
        r = load(out / ("tune1_%d.json" % s))
        first = after(r["rounds"][0]["after_swap"])
        rest = [after(rd["after_swap"]) for rd in r["rounds"][1:]]
        rows.append([str(s), after(r["baseline"]["after_swap"]), after(r["best_per_shape"]["after_swap"]), first,
                     "same" if set(rest) == {first} else "; ".join(rest), gap_cell(r)])
    return header, rows


def render_prediction_error(out):
    """Round 2 of the one-core drift, seed 1: per (kind, rows) the mean
    per-layer error of the uncorrected model, of the parameters in force after
    the round's refit, and of the per-kind line."""
    r = load(out / "tune1_1.json")
    rows = []
    for p in sorted(r["rounds"][1]["prediction_error"], key=lambda p: (p["kind"], p["rows"])):
        rows.append([p["kind"], str(p["rows"]), pct(p["error_before"], 2), pct(p["error_after"], 2),
                     pct(p["error_after_per_kind_line"], 2)])
    return ["kind", "rows", "cost model", "parameters in force (decide)", "line per kind (reported only)"], rows


def fit_cell(f):
    return "`layer_cycles` %.1f, `insn_cycles` %.2f (%d layers)" % (f["layer_cycles"], f["insn_cycles"], f["points"])


def render_refit_rounds(out):
    """The drift with placement, seed 1: each round's refit, judged on its
    held-out plans, the parameters in force after it and what they predict."""
    r = load(out / "tune1.json")
    rows = []
    for rd in r["rounds"]:
        v, cp = rd["refit"], rd["cost_params"]
        if v["validation_plans"] == 0:
            verdict = "rejected: not validated (no held-out plan)"
        else:
            verdict = "%s: %s ≤ %s on %d held-out layers (%d plans)" % (
                "accepted" if v["accepted"] else "rejected", pct(v["error_after"], 2), pct(v["error_before"], 2),
                v["validation_samples"], v["validation_plans"])
            if not v["accepted"]:
                verdict = verdict.replace("≤", ">")
        force = "uncorrected" if cp["fitted_in_round"] == 0 else "round %d's: %s" % (cp["fitted_in_round"],
                                                                                     fit_cell(cp))
        g32 = [p for p in rd["prediction_error"] if p["kind"] == "gemm" and p["rows"] == 32]
        rows.append([str(rd["round"]), fit_cell(v["candidate"]), verdict, force,
                     "%s → %s" % (pct(g32[0]["error_before"], 2), pct(g32[0]["error_after"], 2)) if g32 else "-",
                     "%s → %s" % (pct(rd["plan_error_before"], 2), pct(rd["plan_error_after"], 2)),
                     "%d of %d" % (rd["compiler_plans_changed"], rd["compiler_plans_compared"])])
    header = ["round", "candidate fit", "refit", "parameters in force", "gemm/32 error (uncorrected → in force)",
              "plan error", "plans whose decisions change"]
    return header, rows


BERT = ("{loom} tune examples/tune_bert_drift_workload.yaml --backend tlm --cache {cache} --seed %d --json "
        "-o {out}/bert%d.json")


def render_bert_seeds(out):
    header = ["seed", "requests after swap", "initial mapping (mean / p99)", "per-bucket oracle",
              "offline re-compile (a)", "rounds 1, 2, 3", "gap recovered"]
    rows = []
    for s in SEEDS:
        r = load(out / ("bert%d.json" % s))
        kw = {"unit": "ms", "scale": 1000.0}
        rows.append([str(s), str(r["baseline"]["after_swap"]["requests"]), after(r["baseline"]["after_swap"], **kw),
                     after(r["best_per_shape"]["after_swap"], **kw), after(r["offline_recompile"]["after_swap"], **kw),
                     rounds_cell(r, **kw), gap_cell(r)])
    return header, rows


TABLES = [
    Table("serve-batch-size", "docs/serving.md",
          ["{loom} experiment examples/serve_zoo_batch_sweep.yaml -j 1 -o {out}/sweep"], render_batch_size),
    Table("serve-validate", "docs/serving.md",
          [validate_cmd(VALIDATE_OWN, "own"),
           validate_cmd(VALIDATE_SMALL, "small", "--extra=--config\\ small ")], render_validate),
    Table("serve-contention", "docs/serving.md", ["python3 tests/serve/bench_serving.py {loom} . contention"],
          render_contention),
    Table("serve-portlimit", "docs/serving.md", ["python3 tests/serve/bench_serving.py {loom} . portlimit"],
          render_portlimit),
    Table("serve-bert-layer", "docs/serving.md",
          ["{loom} serve examples/serve_bert_layer_workload.yaml --backend tlm --cache {cache} --json -o {out}/result.json"],
          render_bert_layer),
    Table("serve-soak", "docs/serving.md",
          ["/usr/bin/time -v {loom} serve examples/serve_soak_workload.yaml --mode live --json -o {out}/soak.json",
           "{loom} serve examples/serve_soak_workload.yaml --json -o {out}/sim.json"], render_soak,
          tolerance={"row: resident memory": 0.02, "row: peak resident memory": 0.1, "row: wall time": 1.0}),
    Table("serve-faults", "docs/serving.md", ["python3 scripts/serve_faults.py {loom} --json {out}/faults.json"],
          render_stdout_table),
    Table("tune-drift", "docs/tuning.md", [DRIFT % (s, "tune", s) for s in SEEDS] +
          [DRIFT1 % (s, "tune1_", s) for s in SEEDS], render_drift),
    Table("tune-drift-one-core", "docs/tuning.md", [DRIFT1 % (s, "tune1_", s) for s in SEEDS], render_drift_one_core),
    Table("tune-prediction-error", "docs/tuning.md", [DRIFT1 % (1, "tune1_", 1)], render_prediction_error),
    Table("tune-refit-rounds", "docs/tuning.md", [DRIFT % (1, "tune", 1)], render_refit_rounds),
    Table("tune-bert-seeds", "docs/tuning.md", [BERT % (s, s) for s in SEEDS], render_bert_seeds),
    Table("tune-bert-buckets", "docs/tuning.md", [BUCKETS % (k, k) for k in BUCKET_COUNTS], render_bert_buckets,
          tolerance={"compile of the deployed plans": 1.0}),
]

# ----------------------------------------------------------------- machinery


def md_rows(header, rows, align=None):
    """The table's lines; `align` has an l or r per column (default all l)."""
    align = align or "l" * len(header)
    def line(cells):
        return "|" + "|".join(" %s " % c if c else " " for c in cells) + "|"

    return [line(header), "|" + "".join("---:|" if a == "r" else "---|" for a in align)] + [line(r) for r in rows]


def region_text(t, table):
    lines = ["```sh"] + t.shown() + ["```", ""]
    return lines + md_rows(*table)


def regions(doc_path):
    """{name: (begin line index, end line index)} of a doc's markers; a marker
    without its end, an end without a marker, or a name twice is an Error."""
    lines = doc_path.read_text().splitlines()
    found, open_ = {}, None
    for i, line in enumerate(lines):
        m = BEGIN.match(line.strip())
        if m:
            if open_ is not None:
                raise Error("%s:%d: table '%s' opens before '%s' ends (%s)" %
                            (rel(doc_path), i + 1, m.group(1), open_[0], END))
            if m.group(1) in found:
                raise Error("%s:%d: table '%s' is marked twice" % (rel(doc_path), i + 1, m.group(1)))
            open_ = (m.group(1), i)
        elif line.strip() == END:
            if open_ is None:
                raise Error("%s:%d: %s without a table marker" % (rel(doc_path), i + 1, END))
            found[open_[0]] = (open_[1], i)
            open_ = None
        elif line.strip().startswith("<!-- table"):
            raise Error("%s:%d: malformed marker %r (want <!-- table: NAME -->)" % (rel(doc_path), i + 1, line.strip()))
    if open_ is not None:
        raise Error("%s:%d: table '%s' has no end marker (%s)" % (rel(doc_path), open_[1] + 1, open_[0], END))
    return lines, found


def rel(p):
    try:
        return str(pathlib.Path(p).resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def docs():
    return sorted({t.doc for t in TABLES})


def check_markers(commands=True):
    """Problems between the markers of every doc and the registry, as lines
    (runs nothing); with `commands`, also a command written that is not the
    registry's."""
    bad = []
    by_name = {t.name: t for t in TABLES}
    seen = {}
    for path in sorted((ROOT / "docs").glob("*.md")):
        doc = rel(path)
        lines, found = regions(path)
        for name, (b, e) in found.items():
            seen[name] = doc
            t = by_name.get(name)
            if t is None:
                bad.append("%s:%d: table '%s' has no generator in scripts/doc_tables.py" % (doc, b + 1, name))
                continue
            if t.doc != doc:
                bad.append("%s:%d: table '%s' is registered for %s" % (doc, b + 1, name, t.doc))
                continue
            body = lines[b + 1:e]
            want = ["```sh"] + t.shown() + ["```"]
            if commands and body[:len(want)] != want:
                bad.append("%s:%d: table '%s': the command written is not the registry's (run --write --only %s)" %
                           (doc, b + 1, name, name))
    for t in TABLES:
        if t.name not in seen:
            bad.append("%s: no <!-- table: %s --> marker for the registered table" % (t.doc, t.name))
    return bad


def run_table(t, loom, work, reuse=False):
    out = work / t.name
    if reuse:
        if not out.is_dir():
            raise Error("%s: --reuse: no results in %s (run it once without --reuse)" % (t.name, out))
        return render(t, out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (work / "cache").mkdir(parents=True, exist_ok=True)
    for cmd in t.commands:
        argv = t.argv(cmd, loom, work)
        print("doc_tables: %s: %s" % (t.name, " ".join(shlex.quote(a) for a in argv)), file=sys.stderr, flush=True)
        log = out / "stderr.log"
        with open(log, "a") as err, open(out / "stdout.log", "a") as so:
            prep_experiment(argv, work)
            r = subprocess.run(argv, cwd=ROOT, stdout=so, stderr=err)
        if r.returncode != 0:
            tail = [l for l in log.read_text().splitlines() if l.strip()][-1:] or ["(no output)"]
            raise Error("%s: `%s` failed (exit %d): %s" % (t.name, " ".join(argv), r.returncode, tail[0]))
    return render(t, out)


def render(t, out):
    try:
        return t.render(out)
    except (OSError, KeyError, ValueError, IndexError, TypeError) as e:
        raise Error("%s: cannot read the results in %s: %s: %s" % (t.name, out, type(e).__name__, e))


def prep_experiment(argv, work):
    """`loom experiment` keeps its service times in OUT/cache; pointing it at
    the shared cache makes a rerun cheap (the cache is keyed by every plan)."""
    if len(argv) > 1 and argv[1] == "experiment" and "-o" in argv:
        out = pathlib.Path(argv[argv.index("-o") + 1])
        if not (out / "cache").exists():
            out.mkdir(parents=True, exist_ok=True)
            (out / "cache").symlink_to((work / "cache").resolve(), target_is_directory=True)


def parse_table(lines):
    """The rows (header first) of the Markdown table in `lines`, as cells;
    the separator row is left out."""
    rows = [l.strip() for l in lines if l.strip().startswith("|")]
    return [[c.strip() for c in r.strip("|").split(" | ")] for r in rows
            if not re.match(r"^\|(\s*:?-+:?\s*\|)+$", r)]


NUM = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def cell_differs(a, b, tol):
    if a == b:
        return False
    if tol is None:
        return True
    if NUM.sub("#", a) != NUM.sub("#", b):
        return True
    for x, y in zip(NUM.findall(a), NUM.findall(b)):
        x, y = float(x.replace(",", "")), float(y.replace(",", ""))
        if abs(x - y) > tol * abs(x):  # relative to the doc's figure
            return True
    return False


def first_difference(t, have, want):
    """A sentence naming the first cell where the doc's region differs from the
    regenerated one, or None when they agree (within the declared tolerances)."""
    shown = ["```sh"] + t.shown() + ["```"]
    cells = table_difference(t, have, want)
    if have[:len(shown)] != shown:
        return "the command written differs from the registry's" + ("; " + cells if cells else "")
    return cells


def table_difference(t, have, want):
    h, w = parse_table(have), parse_table(want)
    if not h:
        return "no table in the region"
    if h[0] != w[0]:
        return "header %r, now %r" % (" | ".join(h[0]), " | ".join(w[0]))
    header = w[0]

    def tolerance(row, j):
        """A column's tolerance, or (past the first column) a row's: keys
        `row: PREFIX` match the rows whose first cell starts with PREFIX."""
        if header[j] in t.tolerance:
            return t.tolerance[header[j]]
        for k, x in t.tolerance.items():
            if j > 0 and k.startswith("row: ") and row[0].startswith(k[5:]):
                return x
        return None

    for i in range(max(len(h), len(w))):
        if i >= len(h):
            return "row %d (%s) missing from the doc" % (i, w[i][0])
        if i >= len(w):
            return "row %d (%s) no longer produced" % (i, h[i][0])
        if len(h[i]) != len(w[i]):
            return "row %d (%s): %d cells, now %d" % (i, h[i][0], len(h[i]), len(w[i]))
        for j, (a, b) in enumerate(zip(h[i], w[i])):
            if cell_differs(a, b, tolerance(w[i], j)):
                return "row %d (%s), column '%s': doc '%s', now '%s'" % (i, h[i][0], header[j], a, b)
    return None


def write_atomic(path, text):
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="." + path.name + ".")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def main(argv=None):
    tol = ["  %s: '%s' within %g (relative)" % (t.name, c, x) for t in TABLES for c, x in t.tolerance.items()]
    epilog = __doc__.split("\n\n", 1)[1] + "\nWall-clock columns and rows:\n" + ("\n".join(tol) or "  none")
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=epilog,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("loom", nargs="?", help="the loom binary (build/ci/bin/loom)")
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="regenerate and rewrite the marked regions")
    mode.add_argument("--check", action="store_true", help="regenerate in memory; exit 1 if a table is stale")
    mode.add_argument("--list", action="store_true", help="list the tables, their docs and commands")
    mode.add_argument("--markers", action="store_true", help="check that markers and registry agree; run nothing")
    ap.add_argument("--only", nargs="+", default=[], metavar="NAME", help="these tables only")
    ap.add_argument("--reuse", action="store_true",
                    help="render from the results an earlier run left in WORK/NAME; run no command")
    ap.add_argument("--work", default=str(ROOT / SHOWN_WORK), help="outputs and cache (%(default)s)")
    a = ap.parse_args(argv)
    by_name = {t.name: t for t in TABLES}
    for n in a.only:
        if n not in by_name:
            raise Error("unknown table '%s' (known: %s)" % (n, ", ".join(by_name)))
    chosen = [by_name[n] for n in a.only] if a.only else TABLES
    if a.list:
        for t in chosen:
            print("%s  %s%s" % (t.name, t.doc, "  (not checked: %s)" % t.skip if t.skip else ""))
            for line in t.shown():
                print("    " + line)
            for c, x in t.tolerance.items():
                print("    wall-clock '%s': within %g (relative)" % (c, x))
        return 0
    if a.markers:
        bad = check_markers()
        for b in bad:
            print(b)
        if bad:
            print("doc_tables: markers and registry disagree (%d problem(s))" % len(bad))
            return 1
        print("doc_tables: %d tables, each marked once in %s" % (len(TABLES), ", ".join(docs())))
        return 0
    if not a.loom:
        raise Error("--write and --check need the loom binary")
    loom = os.path.abspath(a.loom)
    if not os.access(loom, os.X_OK):
        raise Error("%s: not an executable" % a.loom)
    work = pathlib.Path(a.work).resolve()
    bad = check_markers(commands=False)
    if bad:
        raise Error(bad[0])
    texts = {doc: regions(ROOT / doc) for doc in docs()}
    stale, new = [], {}
    for t in chosen:
        lines, found = texts[t.doc]
        if t.name not in found:
            raise Error("%s: no <!-- table: %s --> marker" % (t.doc, t.name))
        if t.skip:
            print("doc_tables: %s: not checked: %s" % (t.name, t.skip))
            continue
        region = region_text(t, run_table(t, loom, work, a.reuse))
        b, e = found[t.name]
        diff = first_difference(t, lines[b + 1:e], region)
        if diff:
            stale.append("%s: table '%s' is stale: %s" % (t.doc, t.name, diff))
        else:
            print("doc_tables: %s: fresh" % t.name)
        new[t.name] = region
    if a.check:
        for s in stale:
            print(s)
        if stale:
            print("doc_tables: %d stale table(s); `python3 scripts/doc_tables.py LOOM --write --only %s` rewrites them" %
                  (len(stale), " ".join(s.split("'")[1] for s in stale)))
            return 1
        return 0
    for doc in docs():
        # Read again: the commands can take long, and the prose may have been edited meanwhile.
        lines, found = regions(ROOT / doc)
        missing = [n for n in new if by_name[n].doc == doc and n not in found]
        if missing:
            raise Error("%s: the marker of '%s' went away while its commands ran; nothing written" % (doc, missing[0]))
        out = list(lines)
        for name, (b, e) in sorted(found.items(), key=lambda kv: -kv[1][0]):
            if name in new:
                out[b + 1:e] = new[name]
        if out != lines:
            write_atomic(ROOT / doc, "\n".join(out) + "\n")
            print("doc_tables: wrote %s" % doc)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Error as e:
        print("doc_tables: error: %s" % e, file=sys.stderr)
        sys.exit(1)
    except KeyboardInterrupt:
        print("doc_tables: interrupted", file=sys.stderr)
        sys.exit(130)
