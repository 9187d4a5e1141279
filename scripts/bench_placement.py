#!/usr/bin/env python3
"""Placement measured: static (data-parallel) vs pipeline vs dynamic.

Compiles each workload with `loom compile --placement P`, runs it with
`loom run --check --json` and prints cycles, bit-exactness and per-core
utilization (cycles_compute / run cycles) as a Markdown table
(docs/compiler.md, "Placement").

  scripts/bench_placement.py --loom build/ci/bin/loom --backend tlm --config tiny small
  scripts/bench_placement.py --loom build/ci/bin/loom --backend rtl --config tiny --only demo
"""
import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PLACEMENTS = ["static", "pipeline", "dynamic"]


def demo(batch):
    g = json.load(open(os.path.join(ROOT, "examples", "demo_cnn.json")))
    g = copy.deepcopy(g)
    g["tensors"]["x"]["shape"][0] = batch
    g["tensors"]["y"]["shape"][0] = batch
    g["name"] = "demo_cnn_b%d" % batch
    return g


def conv(name, batch, hw, cin, cout, k, layers=1):
    """`layers` k x k convolutions (stride 1, same padding, relu) of cin -> cout (then cout -> cout)."""
    t = {"x": {"scale": 0.05, "zero_point": -3, "shape": [batch, hw, hw, cin]}}
    nodes = []
    prev, c = "x", cin
    for i in range(layers):
        w, b, y = "w%d" % i, "b%d" % i, "y%d" % i
        t[w] = {"dtype": "int8", "shape": [k, k, c, cout], "init": {"seed": 11 + i, "low": -127, "high": 127},
                "scale": [0.002 + 0.0001 * (j % 7) for j in range(cout)], "zero_point": 0}
        t[b] = {"dtype": "int32", "shape": [cout], "init": {"seed": 31 + i, "low": -500, "high": 500}}
        t[y] = {"scale": 0.1, "zero_point": -128}
        p = k // 2
        nodes.append({"name": "conv%d" % i, "op": "conv2d", "inputs": [prev, w, b], "outputs": [y],
                      "attrs": {"kernel": [k, k], "strides": [1, 1], "pads": [p, p, p, p], "activation": "relu"}})
        prev, c = y, cout
    t[prev]["shape"] = [batch, hw, hw, cout]
    return {"format": "loom-graph", "version": 1, "name": name, "tensors": t, "inputs": ["x"], "outputs": [prev],
            "nodes": nodes}


WORKLOADS = {
    "demo": lambda: [demo(1), demo(4)],
    "conv": lambda: [conv("conv3x3_28x28x32", 1, 28, 32, 32, 3), conv("conv1x1_14x14x64", 1, 14, 64, 64, 1),
                     conv("chain3_conv3x3_16x16x16_b1", 1, 16, 16, 16, 3, layers=3),
                     conv("chain3_conv3x3_16x16x16_b4", 4, 16, 16, 16, 3, layers=3)],
}


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("bench_placement: %s failed: %s" % (" ".join(cmd), (p.stderr or p.stdout).strip()))
    out = p.stdout
    return json.loads(out[out.index("{"):])  # SystemC may print a warning line first


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loom", default=os.path.join(ROOT, "build", "ci", "bin", "loom"))
    ap.add_argument("--backend", default="tlm")
    ap.add_argument("--config", nargs="+", default=["tiny", "small"])
    ap.add_argument("--only", nargs="*", default=list(WORKLOADS))
    ap.add_argument("--tasks-per-core", type=int, default=1, help="dynamic: tile tasks per core and layer")
    ap.add_argument("--json", help="also write the results here")
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        for wl in a.only:
            for g in WORKLOADS[wl]():
                gp = os.path.join(d, g["name"] + ".json")
                json.dump(g, open(gp, "w"))
                for cfg in a.config:
                    res = {}
                    for pl in PLACEMENTS:
                        plan = os.path.join(d, "%s_%s_%s.plan" % (g["name"], cfg, pl))
                        c = run([a.loom, "compile", gp, "--config", cfg, "--placement", pl, "-o", plan, "--json",
                                 "--tasks-per-core", str(a.tasks_per_core)])
                        r = run([a.loom, "run", plan, "--backend", a.backend, "--check", "--json"])
                        util = [core["counters"]["cycles_compute"] / r["cycles"] for core in r["cores"]] if r.get(
                            "cycles") else []
                        res[pl] = {"cycles": r.get("cycles"), "bit_exact": r.get("bit_exact"), "util": util,
                                   "predicted": c.get("predicted_cycles"), "tasks": c.get("tasks"),
                                   "stages": c["stats"].get("placement.stages"),
                                   "units": c["stats"].get("placement.units")}
                    rows.append({"graph": g["name"], "config": cfg, "backend": a.backend, **res})
                    best = min(PLACEMENTS, key=lambda p: res[p]["cycles"] or 0)
                    print("%s %s: %s (best %s)" % (g["name"], cfg, ", ".join(
                        "%s %s%s" % (p, res[p]["cycles"], "" if res[p]["bit_exact"] else " NOT bit-exact")
                        for p in PLACEMENTS), best), file=sys.stderr)
    print("| graph | config | static | pipeline (stages x units) | dynamic (tasks) | best | utilization static / pipeline / dynamic | bit-exact |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        def u(p):
            return "/".join("%.2f" % x for x in r[p]["util"])
        best = min(PLACEMENTS, key=lambda p: r[p]["cycles"])
        print("| %s | %s | %s | %s (%s x %s) | %s (%s) | %s | %s ; %s ; %s | %s |" % (
            r["graph"], r["config"], r["static"]["cycles"], r["pipeline"]["cycles"], r["pipeline"]["stages"],
            r["pipeline"]["units"], r["dynamic"]["cycles"], r["dynamic"]["tasks"], best, u("static"), u("pipeline"),
            u("dynamic"), "yes" if all(r[p]["bit_exact"] for p in PLACEMENTS) else "NO"))
    if a.json:
        json.dump(rows, open(a.json, "w"), indent=1)
    return 0 if all(r[p]["bit_exact"] for r in rows for p in PLACEMENTS) else 1


if __name__ == "__main__":
    sys.exit(main())
