#!/usr/bin/env python3
"""Measures loom's RTL performance with `loom bench` and writes the tables of
docs/performance.md: cycles against the roofline for GEMM and ResNet-50
convolution shapes, and simulation speed, per configuration.

  scripts/perf_report.py --loom build/ci/bin/loom --configs tiny [--quick] [--out docs/performance.md]
  scripts/perf_report.py --loom build/ci/bin/loom --configs tiny --speed [--repeat 5]

Every row is one `loom bench ... --backend rtl --check --json` run; the command
is printed in the table's caption so any row can be rerun. With --speed it
measures simulated cycles per wall second of the rtl backend instead, per
configuration and workload (the demo and a few `loom bench` shapes), with the
checked model (`--rtl-model checked`: tracing compiled in, assertions on) and
the fast one (`--rtl-model fast`) run alternately in the same minutes, the
best of --repeat runs each (the machine is shared; the best run is the one
least disturbed), every run checked bit-exact.
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


SPEED_WORKLOADS = [("demo", ["run", "examples/demo_cnn.json"]),
                   ("gemm 256x256x256", ["bench", "gemm", "--m", "256", "--n", "256", "--k", "256"]),
                   ("conv res5_3x3_512", ["bench", "conv", "--layer", "res5_3x3_512"])]
QUICK_SPEED = SPEED_WORKLOADS[:2]


def timed(loom, args, cfg, model):
    """(cycles, wall seconds of the device run, bit-exact, command) of one run."""
    cmd = [loom] + args + ["--config", cfg, "--backend", "rtl", "--rtl-model", model, "--check", "--json"]
    # From the repository root, where the workloads' paths start.
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([os.path.abspath(loom)] + cmd[1:], capture_output=True, text=True, cwd=root)
    shown = "loom " + " ".join(cmd[1:])
    if r.returncode != 0:
        return None, shown, (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
    j = json.loads(r.stdout[r.stdout.index("{"):])
    return (j["cycles"], j["wall_seconds"], j.get("bit_exact") is True), shown, ""


def speed(a):
    """The simulation-speed table: checked against fast, best of a.repeat each."""
    w = []
    w.append("## RTL simulation speed (`rtl` backend, checked and fast models)")
    w.append("")
    w.append("Measured %s at commit %s on %s." % (datetime.date.today().isoformat(), revision(), machine()))
    w.append("Reproduce: `python3 scripts/perf_report.py --loom %s --configs %s --speed --repeat %d%s`."
             % (a.loom, a.configs, a.repeat, " --quick" if a.quick else ""))
    w.append("Simulated cycles per second of wall time of the device run (`wall_seconds` of the result), best of"
             " %d runs per model, the two models run alternately; `speedup` = fast / checked." % a.repeat)
    for cfg in a.configs.split(","):
        w.append("")
        w.append("### `%s`" % cfg)
        w.append("")
        w.append("| workload | cycles | checked cycles/s | fast cycles/s | speedup | bit-exact | command (checked; "
                 "fast: `--rtl-model fast`) |")
        w.append("|---|---|---|---|---|---|---|")
        for label, args in (QUICK_SPEED if a.quick else SPEED_WORKLOADS):
            best = {"checked": None, "fast": None}
            exact, cycles, shown, err = True, None, "", ""
            for _ in range(a.repeat):
                for model in ("checked", "fast"):
                    res, cmd, e = timed(a.loom, args, cfg, model)
                    if res is None:
                        err = err or e
                        continue
                    if model == "checked":
                        shown = cmd
                    if cycles is not None and res[0] != cycles:
                        err = err or "cycles differ between runs: %d and %d" % (cycles, res[0])
                    cycles = res[0]
                    exact = exact and res[2]
                    rate = res[0] / res[1]
                    best[model] = max(best[model] or 0.0, rate)
            if err or best["checked"] is None or best["fast"] is None:
                w.append("| %s | | failed | | | | `%s` (%s) |" % (label, shown, err[:80]))
                print("FAILED: %s %s: %s" % (cfg, label, err), file=sys.stderr)
                continue
            w.append("| %s | %d | %.0f | %.0f | %.2f | %s | `%s` |" % (
                label, cycles, best["checked"], best["fast"], best["fast"] / best["checked"], str(exact).lower(),
                shown))
            print("%s %s: checked %.0f fast %.0f cycles/s" % (cfg, label, best["checked"], best["fast"]),
                  file=sys.stderr)
    return w


def revision():
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "rtl", "host"],
                           capture_output=True, text=True).stdout.strip()
    return (rev or "?") + (" (with local changes)" if dirty else "")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", default="build/ci/bin/loom")
    ap.add_argument("--configs", default="tiny")
    ap.add_argument("--quick", action="store_true", help="fewer shapes")
    ap.add_argument("--out", default="")
    ap.add_argument("--speed", action="store_true", help="simulation speed, checked against fast model")
    ap.add_argument("--repeat", type=int, default=3, help="runs per model with --speed (the best counts)")
    a = ap.parse_args()
    if a.repeat < 1:
        ap.error("--repeat: expected a number >= 1")
    if a.speed:
        text = "\n".join(speed(a)) + "\n"
        if a.out:
            with open(a.out, "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
        return 0
    gemms = QUICK_GEMMS if a.quick else GEMMS
    convs = QUICK_CONVS if a.quick else CONVS
    lines = []
    w = lines.append
    w("## RTL cycles against the roofline (`rtl` backend)")
    w("")
    w("Measured %s at commit %s on %s." % (datetime.date.today().isoformat(), revision(), machine()))
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
