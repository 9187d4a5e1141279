#!/usr/bin/env python3
"""Smoke of the RTL coverage flow on loom_core with stand-in units (CI; the full run is coverage.goals).

  coverage_smoke.py CORE_COV_BINARY ROOT

Runs the coverage-instrumented core testbench with LOOM_COVERAGE_DIR set and
checks: one .dat file per run, merged by verilator_coverage; line, toggle and
cover points for loom_fetch and loom_dispatch, one point per opcode of the
spec at dispatch and per fetch state (scripts/coverage_report.py --smoke);
the cover points that the testbench's scenarios must reach were hit (every
fetch state, NOP/LOAD/SEM_WAIT/END issued, a blocked SEM_WAIT, an illegal
opcode); LCOV output names the RTL sources; the goals file loads; and bad
input to the report gets one error line and exit status 2.
"""
import os
import shutil
import subprocess
import sys
import tempfile


def fail(msg):
    print("coverage.smoke: FAIL: " + msg)
    sys.exit(1)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def main():
    if len(sys.argv) != 3:
        fail("usage: coverage_smoke.py CORE_COV_BINARY ROOT")
    binary, root = sys.argv[1:3]
    report = os.path.join(root, "scripts", "coverage_report.py")
    tmp = tempfile.mkdtemp(prefix="loom-cov-smoke-")
    try:
        dat_dir = os.path.join(tmp, "dat")
        os.mkdir(dat_dir)
        env = dict(os.environ, LOOM_COVERAGE_DIR=dat_dir)
        for scenario in ("ring", "sem", "illegal"):
            r = run([binary, "--only", scenario], env=env)
            if r.returncode != 0:
                fail("%s --only %s: exit %d\n%s" % (binary, scenario, r.returncode, r.stdout + r.stderr))
        dats = sorted(os.listdir(dat_dir))
        if len(dats) != 3 or not all(d.startswith("core_cov.") and d.endswith(".dat") for d in dats):
            fail("expected three core_cov.*.dat files, got %s" % dats)
        merged = os.path.join(tmp, "merged.dat")
        r = run(["verilator_coverage", "--write", merged] + [os.path.join(dat_dir, d) for d in dats])
        if r.returncode != 0:
            fail("verilator_coverage --write: " + r.stderr.strip())
        r = run([sys.executable, report, merged, "--smoke"])
        print(r.stdout)
        if r.returncode != 0:
            fail("coverage_report.py --smoke: exit %d %s" % (r.returncode, r.stderr.strip()))
        # Points the three scenarios reach by construction.
        counts = {}
        with open(merged, encoding="utf-8", errors="replace") as f:
            for ln in f:
                if "v_user/" in ln:
                    label = ln.split("\x01o\x02", 1)[1].split("\x01", 1)[0]
                    module = ln.split("v_user/", 1)[1].split("\x01", 1)[0].split("__", 1)[0]
                    counts[(module, label)] = counts.get((module, label), 0) + int(ln.rsplit("'", 1)[1])
        must = [("loom_fetch", "c_state_s%d" % i) for i in range(3)] + [
            ("loom_dispatch", "c_op_nop"), ("loom_dispatch", "c_op_load"), ("loom_dispatch", "c_op_sem_wait"),
            ("loom_dispatch", "c_op_end"), ("loom_dispatch", "c_sem_wait_blocked"),
            ("loom_dispatch", "c_op_unknown"), ("loom_core", "c_err_illegal_insn")]
        for m in must:
            if counts.get(m, 0) == 0:
                fail("cover point %s.%s not hit (%s)" % (m[0], m[1], "absent" if m not in counts else "count 0"))
        info = os.path.join(tmp, "coverage.info")
        r = run(["verilator_coverage", "--write-info", info, merged])
        if r.returncode != 0:
            fail("verilator_coverage --write-info: " + r.stderr.strip())
        text = open(info).read()
        for src in ("rtl/core/loom_fetch.sv", "rtl/core/loom_dispatch.sv"):
            if "SF:" + os.path.join(root, src) not in text:
                fail("coverage.info has no SF record for " + src)
        # Bad input: one line on stderr, exit 2.
        for argv in ([merged, "--goals", os.path.join(tmp, "none.yaml")], [os.path.join(tmp, "none.dat")], [info]):
            r = run([sys.executable, report] + argv)
            lines = r.stderr.strip().splitlines()
            if r.returncode != 2 or len(lines) != 1 or not lines[0].startswith("loom: error: coverage:"):
                fail("coverage_report.py %s: expected one error line and exit 2, got exit %d: %r" %
                     (" ".join(argv), r.returncode, r.stderr))
        bad_goals = os.path.join(tmp, "goals.yaml")
        with open(bad_goals, "w") as f:
            f.write("targets: {line: 95, toggle: 85, user_required: [c_op_*]}\n"
                    "waivers: [{point: loom_dispatch.c_op_pool}]\n")
        r = run([sys.executable, report, merged, "--goals", bad_goals])
        if r.returncode != 2 or "needs a reason" not in r.stderr:
            fail("a waiver without a reason was accepted (exit %d)" % r.returncode)
        print("coverage.smoke: PASS, %d cover points, %d files merged" %
              (sum(1 for k in counts), len(dats)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
