#!/usr/bin/env python3
"""Runs entries of the regression list through the `loom` CLI on a backend and
requires bit-exact outputs against the direct reference.

  run_regression.py --loom BIN --root DIR --list [--tag fast] [--backend B]
  run_regression.py --loom BIN --root DIR --backend ref --entry demo_cnn@tiny
"""
import argparse
import json
import os
import shlex
import subprocess
import sys

import yaml


def load(root):
    with open(os.path.join(root, "tests", "e2e", "regression.yaml")) as f:
        return yaml.safe_load(f)["entries"]


def cases(entries, tag, backend):
    """(name, entry, config) of the entries with the tag that run on the backend
    (an entry's `backends` list restricts it; without one it runs on all)."""
    for e in entries:
        if tag and tag not in e.get("tags", []):
            continue
        if backend and "backends" in e and backend not in e["backends"]:
            continue
        for c in e["configs"]:
            yield "%s@%s" % (e["name"], c), e, c


def command(loom, root, e, cfg, backend):
    """The entry's command; on rtl with the checked model (tracing and
    assertions), which the regression keeps whatever the build's default."""
    return base_command(loom, root, e, cfg, backend) + (["--rtl-model", "checked"] if backend == "rtl" else [])


def base_command(loom, root, e, cfg, backend):
    k = e["kind"]
    if k == "graph":
        return [loom, "run", os.path.join(root, e["graph"]), "--config", cfg, "--backend", backend, "--check", "--json"] + (
            ["--placement", e["placement"]] if "placement" in e else []) + (["--hls", e["hls"]] if "hls" in e else [])
    if k == "gemm":
        return [loom, "bench", "gemm", "--m", str(e["m"]), "--n", str(e["n"]), "--k", str(e["k"]), "--config", cfg,
                "--backend", backend, "--check", "--json"]
    if k == "conv":
        cmd = [loom, "bench", "conv", "--config", cfg, "--backend", backend, "--check", "--json"]
        if "layer" in e:
            return cmd + ["--layer", e["layer"]]
        return cmd + ["--hw", str(e["hw"]), "--cin", str(e["cin"]), "--cout", str(e["cout"]), "--kernel",
                      str(e["kernel"]), "--stride", str(e["stride"]), "--pad", str(e["pad"])]
    raise SystemExit("regression.yaml: entry %s: unknown kind '%s'" % (e["name"], k))


def reproduce(cmd, e, name, backend):
    """`cmd` as one shell line with its seed explicit and, on a backend that
    has the fabric's signals, an FST waveform named after the entry: `--wave`
    for `loom run`, the variable standing for it for `loom bench`."""
    out = list(cmd)
    if "--seed" not in out:
        out += ["--seed", "1"]  # every kind's default: weights and inputs
    wave = name.replace("@", "_") + ".fst"
    env = ""
    if backend in ("rtl", "cosim"):
        if e["kind"] == "graph":
            out += ["--wave", wave]
        else:
            env = "LOOM_RTL_TRACE=%s " % wave
    return env + " ".join(shlex.quote(x) for x in out)


def first_problem(stdout, stderr):
    """The first assertion, error or output mismatch of a failed run: the line
    to read first in a long log (later assertions often follow from it)."""
    for line in stderr.splitlines():
        if "assertion failed" in line or "%Error" in line:
            return line.strip()
    try:
        j = json.loads(stdout[stdout.index("{"):])
        for m in j.get("mismatches", []):
            return "output %s: %s elements differ from the direct reference, max |diff| %s" % (
                m.get("output"), m.get("mismatched_elements"), m.get("max_abs_diff"))
    except ValueError:
        pass
    for line in stderr.splitlines():
        if line.strip():
            return line.strip()
    return "exit code %s and no message" % "?"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--tag", default="")
    ap.add_argument("--backend", default="")
    ap.add_argument("--entry", action="append", default=[])
    a = ap.parse_args()
    entries = load(a.root)
    all_cases = {n: (e, c) for n, e, c in cases(entries, a.tag, a.backend)}
    if a.list:
        print(";".join(sorted(all_cases)))
        return 0
    passed = failed = 0
    for name in a.entry or sorted(all_cases):
        if name not in all_cases:
            print("unknown entry %s" % name)
            failed += 1
            continue
        e, cfg = all_cases[name]
        cmd = command(a.loom, a.root, e, cfg, a.backend or "ref")
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0 and "not verilated into this build" in r.stderr:
            print("SKIPPED %s on %s: %s" % (name, a.backend, r.stderr.strip()))
            continue
        ok = r.returncode == 0
        info = ""
        if ok:
            try:
                j = json.loads(r.stdout[r.stdout.index("{"):])  # SystemC may print a warning line first
            except ValueError:
                j = {}
            ok = j.get("bit_exact") is True
            info = "instructions=%s cycles=%s" % (j.get("instructions"), j.get("cycles"))
        print("%s %s on %s: %s %s" % ("PASS" if ok else "FAIL", name, a.backend, info, r.stderr.strip()))
        if not ok:
            # The first assertion or mismatch, then the command with its seed
            # and the fabric's waves; also on stderr, where `loom experiment
            # --merge` takes a point's error.
            first = first_problem(r.stdout, r.stderr).replace("exit code ?", "exit code %d" % r.returncode)
            print("first: " + first)
            line = "reproduce: " + reproduce(cmd, e, name, a.backend or "ref")
            print(line)
            print("loom: error: %s failed on %s; %s" % (name, a.backend or "ref", line), file=sys.stderr)
        passed += ok
        failed += not ok
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
