#!/usr/bin/env python3
"""The simulator's tail predictions against live execution.

Runs `loom serve W --mode sim` and `loom serve W --mode live` for each workload
(default: every examples/*_workload.yaml) on one backend and prints, per
stream, p50 and p99 of both and the simulator's prediction error (sim / live
- 1) as a Markdown table; the rows whose p99 is off by more than 5 % are
marked. docs/serving.md "Live mode" holds the table and this command.

  python3 scripts/serve_validate.py build/ci/bin/loom [--backend tlm] [--cache DIR] [--json OUT]
      [--extra="--config small"] [W.yaml ...]
"""
import argparse
import glob
import json
import os
import sys

from loomtool import run_json, script_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def serve(loom, workload, mode, backend, cache, extra):
    args = [loom, "serve", workload, "--backend", backend, "--mode", mode, "--json"] + extra
    if cache:
        args += ["--cache", cache]
    return run_json(args, "%s --mode %s failed" % (os.path.basename(workload), mode))


def err(sim, live):
    if sim is None or live is None or live == 0:
        return None
    return sim / live - 1.0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("loom")
    ap.add_argument("workloads", nargs="*")
    ap.add_argument("--backend", default="tlm")
    ap.add_argument("--cache", default="")
    ap.add_argument("--json", default="", help="also write the rows as JSON to this file")
    ap.add_argument("--extra", default="", help="more `loom serve` arguments, space separated")
    a = ap.parse_intermixed_args(argv)
    workloads = a.workloads or sorted(glob.glob(os.path.join(ROOT, "examples", "*_workload.yaml")))
    extra = a.extra.split()
    rows = []
    for w in workloads:
        s = serve(a.loom, w, "sim", a.backend, a.cache, extra)
        l = serve(a.loom, w, "live", a.backend, a.cache, extra)
        if s["submitted"] != l["submitted"]:
            raise RuntimeError("%s: %d requests simulated, %d live" % (w, s["submitted"], l["submitted"]))
        for ss, ls in zip(s["streams"], l["streams"]):
            row = {"workload": os.path.basename(w), "stream": ss["name"], "requests": ss["submitted"],
                   "failed_live": ls["failed"]}
            for k in ("p50_us", "p99_us"):
                row["sim_" + k] = ss["latency"][k]
                row["live_" + k] = ls["latency"][k]
                row["err_" + k] = err(ss["latency"][k], ls["latency"][k])
            rows.append(row)
    print("| workload | stream | requests | p50 sim | p50 live | error | p99 sim | p99 live | error |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")

    def us(x):
        return "-" if x is None else ("%.1f us" % x if x < 1000 else "%.3f ms" % (x / 1000))

    def pct(x):
        return "-" if x is None else "%+.2f %%" % (100 * x)

    off = 0
    for r in rows:
        mark = ""
        if r["err_p99_us"] is not None and abs(r["err_p99_us"]) > 0.05:
            mark, off = " **(> 5 %)**", off + 1
        print("| %s | %s | %d | %s | %s | %s | %s | %s | %s%s |" % (
            r["workload"], r["stream"], r["requests"], us(r["sim_p50_us"]), us(r["live_p50_us"]), pct(r["err_p50_us"]),
            us(r["sim_p99_us"]), us(r["live_p99_us"]), pct(r["err_p99_us"]), mark))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
            f.write("\n")
    print("\n%d streams, %d with p99 off by more than 5 %%" % (len(rows), off))
    return 0


if __name__ == "__main__":
    script_main("serve_validate", main)
