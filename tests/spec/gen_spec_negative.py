#!/usr/bin/env python3
"""Checks that scripts/gen_spec.py refuses broken specs (overlapping fields,
duplicate opcodes) and that --check notices a stale generated file."""
import os
import shutil
import subprocess
import sys
import tempfile

root = sys.argv[1]
gen = os.path.join(root, "scripts", "gen_spec.py")


def copy_tree():
    d = tempfile.mkdtemp()
    shutil.copytree(os.path.join(root, "docs", "spec"), os.path.join(d, "docs", "spec"))
    for rel in ("rtl/generated/loom_pkg.sv", "host/spec/loom/spec_gen.h"):
        os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
        shutil.copy(os.path.join(root, rel), os.path.join(d, rel))
    return d


def run(d, *args):
    return subprocess.run([sys.executable, gen, "--root", d] + list(args), capture_output=True, text=True)


failures = 0
# 1. overlapping field
d = copy_tree()
p = os.path.join(d, "docs", "spec", "isa.yaml")
s = open(p).read().replace("{name: rows,        bit: 112", "{name: rows,        bit: 100", 1)
open(p, "w").write(s)
r = run(d, "--check")
if r.returncode == 0 or "overlaps" not in r.stderr:
    print("FAIL: overlapping field accepted:", r.returncode, r.stderr)
    failures += 1
shutil.rmtree(d)
# 2. stale generated header
d = copy_tree()
p = os.path.join(d, "host", "spec", "loom", "spec_gen.h")
open(p, "a").write("// hand edit\n")
r = run(d, "--check")
if r.returncode == 0 or "stale" not in r.stderr:
    print("FAIL: stale header not detected:", r.returncode, r.stderr)
    failures += 1
shutil.rmtree(d)
print("%d passed, %d failed" % (2 - failures, failures))
sys.exit(1 if failures else 0)
