#!/usr/bin/env python3
"""Faults under load: every fault kind injected into a live multi-stream run.

Runs `loom serve W --mode live` once without a fault and once per scenario
(`--fault KIND@AT_MS[+FOR_MS][/CORE]`), and prints a Markdown table: what the
runtime saw, batches failed, requests retried / failed / dropped, requests
lost (submitted - completed - failed - dropped: must be 0), and each stream's
p99 against the run without a fault. docs/serving.md "Faults under load"
holds the table and this command.

  python3 scripts/serve_faults.py build/ci/bin/loom [--workload W] [--backend tlm] [--json OUT] [--only KIND...]
"""
import argparse
import json
import os
import sys

from loomtool import run_json, script_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "examples", "serve_faults_workload.yaml")

# Aimed at core 0, the busiest (dynamic scheduling takes the lowest free core).
SCENARIOS = [
    "slverr-read@10+5/0",
    "decerr-read@10+5/0",
    "slverr-write@10+5/0",
    "decerr-write@10+5/0",
    "mem-stall@10+5",
    "watchdog@10/0",
    "host-timeout@10/0",
    "illegal-insn@10/0",
    "window@10/0",
    "core-reset@10/0",
    "lost-irq@10+5/0",
    "corrupt-output@10/0",
]


def serve(loom, w, backend, faults):
    args = [loom, "serve", w, "--backend", backend, "--mode", "live", "--json"]
    for f in faults:
        args += ["--fault", f]
    return run_json(args, " ".join(faults) or "no fault")


def short(reason):
    # "tlm: core 0: device error axi_slverr at instruction 1 (LOAD) of plan ..." -> "device error axi_slverr"
    for key in ("device error ", "differs from the golden model", "host-side timeout", "went idle without"):
        i = reason.find(key)
        if i >= 0:
            if key == "device error ":
                return "device error " + reason[i + len(key):].split(" ")[0]
            return {"differs from the golden model": "output differs from the golden model",
                    "host-side timeout": "host-side timeout",
                    "went idle without": "core idle without END (reset)"}[key]
    return reason


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("loom")
    ap.add_argument("--workload", default=WORKLOAD)
    ap.add_argument("--backend", default="tlm")
    ap.add_argument("--json", default="")
    ap.add_argument("--only", nargs="*", default=[])
    a = ap.parse_args(argv)
    base = serve(a.loom, a.workload, a.backend, [])
    names = [s["name"] for s in base["streams"]]
    rows = []
    for sc in SCENARIOS:
        if a.only and sc.split("@")[0] not in a.only:
            continue
        r = serve(a.loom, a.workload, a.backend, [sc])
        lv = r["live"]
        lost = r["submitted"] - r["completed"] - r["failed"] - r["dropped"]
        seen = sorted({short(f["reason"]) for f in lv["failures"]})
        if not seen and lv["checked_runs"] == lv["device_runs"]:
            seen = ["no batch failed"]
        row = {"fault": sc, "applied_ms": lv["faults_injected"][0]["applied_ms"], "seen": seen,
               "failed_batches": sum(f["batches"] for f in lv["failures"]), "retried": lv["retried_requests"],
               "failed": r["failed"], "dropped": r["dropped"], "lost": lost, "submitted": r["submitted"],
               "out_of_service": sum(c.get("out_of_service", 0) for c in r["cores"]),
               "p99_us": {s["name"]: s["latency"]["p99_us"] for s in r["streams"]},
               "base_p99_us": {s["name"]: s["latency"]["p99_us"] for s in base["streams"]}}
        rows.append(row)
    head = "| fault | applied at | the runtime saw | batches failed | retried | failed | dropped | lost |"
    head += "".join(" %s p99 |" % n for n in names)
    print(head)
    print("|---|---:|---|---:|---:|---:|---:|---:|" + "---:|" * len(names))
    print("| (none) | - | - | 0 | 0 | %d | %d | %d |" % (base["failed"], base["dropped"],
                                                        base["submitted"] - base["completed"] - base["failed"] -
                                                        base["dropped"]) +
          "".join(" %.0f us |" % s["latency"]["p99_us"] for s in base["streams"]))
    for r in rows:
        cells = ""
        for n in names:
            p, b = r["p99_us"][n], r["base_p99_us"][n]
            cells += " %.0f us (%+.0f %%) |" % (p, 100 * (p / b - 1)) if p and b else " - |"
        applied = "-" if r["applied_ms"] is None else "%.2f ms" % r["applied_ms"]
        print("| `%s` | %s | %s | %d | %d | %d | %d | %d |%s" % (
            r["fault"], applied, "; ".join(r["seen"]), r["failed_batches"], r["retried"], r["failed"], r["dropped"],
            r["lost"], cells))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"baseline_p99_us": {s["name"]: s["latency"]["p99_us"] for s in base["streams"]}, "rows": rows},
                      f, indent=2)
            f.write("\n")
    lost = sum(r["lost"] for r in rows)
    print("\n%d scenarios, %d requests lost" % (len(rows), lost))
    return 1 if lost else 0


if __name__ == "__main__":
    script_main("serve_faults", main)
