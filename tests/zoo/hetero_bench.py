#!/usr/bin/env python3
"""Heterogeneous placement measured on zoo workloads: each model compiled with
`--hls off` and `--hls auto` (`loom compile model.onnx --config C --json
--explain`), both plans run on tlm with `--check` (and the auto plan on ref
with `--check`), on the zoo's own input. Prints a Markdown table (cycles,
change, the layers the hls-placement pass moved, bit-exactness) and writes
the raw numbers as JSON with --json-out.

Usage:
  tests/zoo/hetero_bench.py LOOM [--configs tiny,small] [--models mnv2_block,r50_stem,bert32]
                           [--json-out FILE] [--workdir DIR]

Models: mnv2_block (MobileNetV2 block slice), mnv2_stem, mnv2 (whole),
r50_stem (ResNet-50 stem slice), r50_stage1, r50 (whole), bert32 / bert64 /
... (BERT-base layer at that sequence length).
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ZOO = {
    "mnv2_block": ("MobileNetV2 block slice", ["mobilenetv2", "--slice", "block"]),
    "mnv2_stem": ("MobileNetV2 stem slice", ["mobilenetv2", "--slice", "stem"]),
    "r50_stem": ("ResNet-50 stem slice", ["resnet50", "--slice", "stem"]),
    "r50_stage1": ("ResNet-50 stage1 slice", ["resnet50", "--slice", "stage1"]),
    "mnv2": ("MobileNetV2 (whole)", ["mobilenetv2"]),
    "r50": ("ResNet-50 (whole)", ["resnet50"]),
}


def zoo_args(key):
    if key in ZOO:
        return ZOO[key]
    m = re.fullmatch(r"bert(\d+)", key)
    if m:
        return ("BERT-base layer, seq " + m.group(1), ["bert", "--seq", m.group(1)])
    raise SystemExit("hetero_bench: unknown model '%s' (%s or bertN)" % (key, ", ".join(ZOO)))


def run(loom, *args):
    r = subprocess.run([loom] + [str(a) for a in args], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        raise SystemExit("hetero_bench: loom %s failed: %s" % (" ".join(map(str, args)), r.stderr.strip()))
    return json.loads(r.stdout)


def moved_layers(compiled):
    """The hls-placement decisions that put a layer (or part of it) on a unit."""
    out = []
    for d in compiled.get("decisions", []):
        if d["pass"] != "hls-placement":
            continue
        t = d["decision"]
        if t.startswith("unit:"):
            kern = re.search(r"loom_hls_(\w+)", t).group(1)
            out.append("%s (whole, %s)" % (d["node"], kern))
        elif t.startswith("split:"):
            m = re.match(r"split: rows \[0, (\d+)\) of (\d+)", t)
            kern = re.search(r"loom_hls_(\w+)", t).group(1)
            share = 100.0 * (int(m.group(2)) - int(m.group(1))) / int(m.group(2))
            out.append("%s (%.0f %% of pixels, %s)" % (d["node"], share, kern))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loom")
    ap.add_argument("--configs", default="tiny,small")
    ap.add_argument("--models", default="mnv2_block,r50_stem,bert32")
    ap.add_argument("--json-out")
    ap.add_argument("--workdir")
    a = ap.parse_args()
    loom = os.path.abspath(a.loom)
    work = a.workdir or tempfile.mkdtemp(prefix="loom_hetero_bench_")
    os.makedirs(work, exist_ok=True)
    rows = []
    try:
        for key in a.models.split(","):
            title, zargs = zoo_args(key)
            d = os.path.join(work, key)
            if not os.path.exists(os.path.join(d, "model.onnx")):
                r = subprocess.run([loom, "zoo", "build"] + zargs + ["-o", d], capture_output=True, text=True)
                if r.returncode != 0:
                    raise SystemExit("hetero_bench: loom zoo build %s: %s" % (" ".join(zargs), r.stderr.strip()))
            model = os.path.join(d, "model.onnx")
            inp = os.path.join(d, "test_data_set_0", "input_0.pb")
            for cfg in a.configs.split(","):
                res = {"model": key, "title": title, "config": cfg}
                for hls in ("off", "auto"):
                    plan = os.path.join(work, "%s_%s_%s.plan" % (key, cfg, hls))
                    c = run(loom, "compile", model, "--config", cfg, "--hls", hls, "-o", plan, "--json", "--explain")
                    t = run(loom, "run", plan, "--backend", "tlm", "--check", "--json", "--inputs", inp)
                    res[hls] = {"cycles": t["cycles"], "bit_exact_tlm": t["bit_exact"],
                                "unit_calls": sum(s["unit_calls"] for s in c["segments"]),
                                "segments": len(c["segments"]), "fallback_ops": c["fallback_op_count"]}
                    if hls == "auto":
                        ref = run(loom, "run", plan, "--backend", "ref", "--check", "--json", "--inputs", inp)
                        res[hls]["bit_exact_ref"] = ref["bit_exact"]
                        res["moved"] = moved_layers(c)
                res["change"] = res["auto"]["cycles"] / res["off"]["cycles"] - 1.0
                rows.append(res)
                print("%s %s: off %d, auto %d cycles (%+.1f %%), %d unit calls" %
                      (key, cfg, res["off"]["cycles"], res["auto"]["cycles"], 100 * res["change"],
                       res["auto"]["unit_calls"]), file=sys.stderr)
    finally:
        if not a.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print("| model | config | `--hls off` cycles | `--hls auto` cycles | change | unit calls | layers on units | "
          "bit-exact (tlm off / tlm auto / ref auto) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        ok = lambda b: "yes" if b else "NO"
        print("| %s | %s | %s | %s | %+.1f %% | %d | %s | %s / %s / %s |" %
              (r["title"], r["config"], format(r["off"]["cycles"], ","), format(r["auto"]["cycles"], ","),
               100 * r["change"], r["auto"]["unit_calls"], "; ".join(r["moved"]) or "none",
               ok(r["off"]["bit_exact_tlm"]), ok(r["auto"]["bit_exact_tlm"]), ok(r["auto"]["bit_exact_ref"])))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(rows, f, indent=2)
    if not all(r["off"]["bit_exact_tlm"] and r["auto"]["bit_exact_tlm"] and r["auto"]["bit_exact_ref"] for r in rows):
        sys.exit(1)


if __name__ == "__main__":
    main()
