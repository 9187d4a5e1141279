#!/usr/bin/env python3
"""`loom report` timed on a serve result with many streams (docs/serving.md,
"Reports and experiments").

Writes a workload of N small streams (tiny, 20 ms, a few requests each),
serves it once on tlm with a trace, then times `loom report` on that one
result with each report script given (LOOM_REPORT_SCRIPT), one after the
other, and prints wall time and peak memory as a Markdown table.

  scripts/bench_report.py --loom build/ci/bin/loom --streams 5000
  git show 883b0fd:scripts/report.py > /tmp/report_main.py   # before the summary of many streams
  scripts/bench_report.py --loom build/ci/bin/loom --streams 5000 --script /tmp/report_main.py --script scripts/report.py
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def workload(n):
    lines = ["config: tiny", "duration_ms: 20", "seed: 3", "batching: fixed", "scheduling: dynamic", "max_batch: 4",
             "max_queue_delay_ms: 0.2", "streams:"]
    for i in range(n):
        lines += ["  - name: s%04d" % i, "    model: gemm_chain", "    hidden: 16", "    ffn: 32",
                  "    slo_ms: %d" % (2 + i % 5), "    arrival: {poisson: {rate: %d}}" % (100 + (i % 7) * 50),
                  "    seq_len: {values: [4, 8, 16], weights: [3, 2, 1]}"]
    return "\n".join(lines) + "\n"


def timed(argv, env):
    """Wall seconds and peak resident MiB of one child process."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    return time.monotonic() - t0, ru.ru_maxrss / 1024.0, os.waitstatus_to_exitcode(status)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loom", required=True)
    ap.add_argument("--streams", type=int, default=5000)
    ap.add_argument("--script", action="append", help="report script to time (repeatable; default scripts/report.py)")
    ap.add_argument("--keep", help="keep the result and the reports in this folder")
    a = ap.parse_args()
    scripts = a.script or [os.path.join(ROOT, "scripts", "report.py")]
    work = a.keep or tempfile.mkdtemp(prefix="loom_bench_report_")
    os.makedirs(work, exist_ok=True)
    try:
        w = os.path.join(work, "w%d.yaml" % a.streams)
        with open(w, "w") as f:
            f.write(workload(a.streams))
        res = os.path.join(work, "r%d.json" % a.streams)
        sec, mib, rc = timed([a.loom, "serve", w, "--backend", "tlm", "-o", res, "--trace",
                              os.path.join(work, "t%d.json" % a.streams)], os.environ)
        if rc != 0:
            sys.exit("loom serve failed (exit %d)" % rc)
        print("serve: %d streams, %.1f s, result %.1f MB" % (a.streams, sec, os.path.getsize(res) / 1e6), file=sys.stderr)
        print("| report script | wall (s) | peak memory (MiB) |")
        print("|---|---|---|")
        for k, script in enumerate(scripts):
            env = dict(os.environ, LOOM_REPORT_SCRIPT=os.path.abspath(script))
            sec, mib, rc = timed([a.loom, "report", res, "-o", os.path.join(work, "report%d" % k)], env)
            print("| %s | %s | %.0f |" % (script, "%.1f" % sec if rc == 0 else "failed (exit %d)" % rc, mib))
            sys.stdout.flush()
    finally:
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
