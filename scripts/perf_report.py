#!/usr/bin/env python3
"""Measures loom's RTL performance with `loom bench` and writes the tables of
docs/performance.md: cycles against the roofline for GEMM and ResNet-50
convolution shapes, and simulation speed, per configuration.

  scripts/perf_report.py --loom build/ci/bin/loom --configs tiny [--quick] [--out docs/performance.md]

Every row is one `loom bench ... --backend rtl --check --json` run; the command
is printed in the table's caption so any row can be rerun.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys

GEMMS = [(64, 64, 64), (128, 128, 128), (256, 256, 256), (512, 512, 512), (1024, 64, 256), (49, 2048, 512)]
CONVS = ["res2_3x3_64", "res3_1x1_128_512", "res4_3x3_256", "res5_3x3_512", "res5_1x1_2048_512"]
QUICK_GEMMS = [(64, 64, 64), (256, 256, 256)]
QUICK_CONVS = ["res5_3x3_512"]


def bench(loom, args, cfg, backend="rtl"):
    cmd = [loom, "bench"] + args + ["--config", cfg, "--backend", backend, "--check", "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        return None, " ".join(cmd), r.stderr.strip()
    return json.loads(r.stdout), " ".join(cmd[1:]), ""


def machine():
    cpu = "unknown"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return "%s, %d cores, %s, load average %.1f at start" % (cpu, os.cpu_count() or 0, platform.platform(), load)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", default="build/ci/bin/loom")
    ap.add_argument("--configs", default="tiny")
    ap.add_argument("--quick", action="store_true", help="fewer shapes")
    ap.add_argument("--out", default="")
    a = ap.parse_args()
    gemms = QUICK_GEMMS if a.quick else GEMMS
    convs = QUICK_CONVS if a.quick else CONVS
    lines = []
    w = lines.append
    w("## RTL cycles against the roofline (`rtl` backend)")
    w("")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "rtl", "host"],
                           capture_output=True, text=True).stdout.strip()
    w("Measured %s at commit %s%s on %s." % (datetime.date.today().isoformat(), rev or "?",
                                              " (with local changes)" if dirty else "", machine()))
    w("Reproduce all tables: `python3 scripts/perf_report.py --loom %s --configs %s%s`."
      % (a.loom, a.configs, " --quick" if a.quick else ""))
    w("`roofline_cycles` = max(MACs / peak MACs per cycle, compulsory DRAM bytes / bytes per cycle);"
      " `fraction` = roofline_cycles / measured cycles (1.0 is the roofline). Every run is also checked"
      " bit-exact against the direct reference (`--check`).")
    speeds = []
    for cfg in a.configs.split(","):
        w("")
        w("### `%s`" % cfg)
        w("")
        w("| workload | MACs | cycles | roofline cycles | fraction | sim cycles/s | bit-exact | command |")
        w("|---|---|---|---|---|---|---|---|")
        rows = [(["gemm", "--m", str(m), "--n", str(n), "--k", str(k)], "gemm %dx%dx%d" % (m, n, k)) for m, n, k in gemms]
        rows += [(["conv", "--layer", c], "conv %s" % c) for c in convs]
        for args, label in rows:
            j, cmd, err = bench(a.loom, args, cfg)
            if j is None:
                w("| %s | | failed | | | | | `loom %s` (%s) |" % (label, cmd, err[:80]))
                print("FAILED: %s: %s" % (cmd, err), file=sys.stderr)
                continue
            speeds.append((cfg, label, j["sim_cycles_per_second"]))
            w("| %s | %d | %d | %d | %.3f | %.0f | %s | `loom %s` |" % (
                label, j["macs"], j["cycles"], j["roofline_cycles"], j["roofline_fraction"],
                j["sim_cycles_per_second"], str(j["bit_exact"]).lower(), cmd))
            print("%s %s: cycles %d fraction %.3f" % (cfg, label, j["cycles"], j["roofline_fraction"]), file=sys.stderr)
    w("")
    text = "\n".join(lines) + "\n"
    if a.out:
        with open(a.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
