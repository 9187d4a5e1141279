#!/usr/bin/env python3
"""Measures the zoo's family networks on a timed backend and prints the
tables of docs/performance.md ("Families"): per network its MACs, device
cycles and share of peak MACs, then where its cycles go (by op kind, with
the layers that take most), from one `loom run ... --layer-cycles --json`
each.

  scripts/family_report.py --loom build/ci/bin/loom [--config default] [--backend tlm]
                           [--slice full] [--families resnext,vit] [--work DIR]

Each row's command is `loom zoo build NAME --slice S -o DIR` then
`loom run DIR/model.onnx --backend B --config C --layer-cycles --json
--inputs DIR/test_data_set_0/input_0.pb`.
"""
import argparse
import atexit
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

FAMILIES = ("resnext", "regnet", "efficientnet", "mobilenetv3", "squeezenet", "googlenet", "densenet", "shufflenet",
            "convnext", "vit", "encoder", "lraspp")


def peak(loom, config):
    info = json.loads(subprocess.run([loom, "info", "--json"], capture_output=True, text=True, check=True).stdout)
    for c in info["configs"]:
        if c["name"] == config:
            return c["cores"] * c["array_rows"] * c["array_cols"]
    sys.exit("family_report: no configuration '%s'" % config)


def measure(loom, name, slice_, config, backend, work):
    d = os.path.join(work, "%s_%s" % (name, slice_))
    if not os.path.exists(os.path.join(d, "model.onnx")):
        subprocess.run([loom, "zoo", "build", name, "--slice", slice_, "-o", d], check=True, capture_output=True)
    r = subprocess.run([loom, "run", os.path.join(d, "model.onnx"), "--backend", backend, "--config", config,
                        "--layer-cycles", "--json", "--inputs", os.path.join(d, "test_data_set_0", "input_0.pb")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("family_report: %s: %s" % (name, r.stderr.strip()))
    return json.loads(r.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--loom", required=True)
    ap.add_argument("--config", default="default")
    ap.add_argument("--backend", default="tlm")
    ap.add_argument("--slice", default="full")
    ap.add_argument("--families", default=",".join(FAMILIES))
    ap.add_argument("--work", default=None, help="folder for the built models (kept); default: a temporary one, removed at the end")
    a = ap.parse_args()
    per_cycle = peak(a.loom, a.config)
    work = a.work or tempfile.mkdtemp(prefix="loom_families_")
    os.makedirs(work, exist_ok=True)
    if not a.work:
        atexit.register(shutil.rmtree, work, True)
    rows, causes = [], []
    for name in a.families.split(","):
        j = measure(a.loom, name, a.slice, a.config, a.backend, work)
        macs = sum(l["macs"] for l in j["layers"])
        cycles = j["cycles"]
        inner = [f for f in j["fallback_ops"] if not f.endswith("(QuantizeLinear)") and not f.endswith("(DequantizeLinear)")]
        rows.append("| %s | %.3f G | %s | **%.1f %%** | %d | %d |" %
                    (name, macs / 1e9, format(cycles, ","), 100.0 * macs / (cycles * per_cycle), len(j["segments"]),
                     len(inner)))
        by_op = collections.Counter()
        for l in j["layers"]:
            by_op[l["op"]] += l.get("cycles", 0)
        top = sorted(j["layers"], key=lambda l: -l.get("cycles", 0))[:3]
        share = ", ".join("%s %.0f %%" % (op, 100.0 * c / max(1, sum(by_op.values()))) for op, c in by_op.most_common(4))
        worst = "; ".join("%s (%s) %.0f %% of peak, %.1f %% of cycles" %
                          (l["name"], l["op"], 100.0 * l.get("mac_utilization", 0), 100.0 * l.get("cycles", 0) / cycles)
                          for l in top)
        causes.append("| %s | %s | %s |" % (name, share, worst))
    print("Families on %s `%s`, %s slices (%d MACs a cycle at peak): `scripts/family_report.py --loom L --config %s "
          "--backend %s --slice %s`\n" % (a.backend, a.config, a.slice, per_cycle, a.config, a.backend, a.slice))
    print("| family | MACs | cycles | of peak MACs | segments | host ops inside |")
    print("|---|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    print("\nWhere the cycles go (by op kind; the three layers with most cycles):\n")
    print("| family | cycles by op kind | largest layers |")
    print("|---|---|---|")
    print("\n".join(causes))


if __name__ == "__main__":
    main()
