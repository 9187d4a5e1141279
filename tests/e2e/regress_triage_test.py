#!/usr/bin/env python3
"""scripts/regress.sh on a fabric that fails on purpose: every failing entry's
log keeps the first assertion (or output mismatch) and prints one command
that reproduces it (backend, config, seed, and the waves: `--wave NAME.fst`
for `loom run`, LOOM_RTL_TRACE=NAME.fst for `loom bench`), and that command,
run with the real loom, writes the waveform.

A stand-in for loom breaks the runs: `loom experiment` (the launcher) is the
real one; every run on rtl prints two assertion failures as Verilator does
and fails, except the demo's plain entry, whose outputs mismatch.

usage: regress_triage_test.py LOOM ROOT
"""
import json
import os
import shlex
import subprocess
import sys
import tempfile

STUB = r"""#!/bin/sh
# A loom whose fabric breaks (regress_triage_test.py).
if [ "$1" = experiment ]; then exec "%(loom)s" "$@"; fi
case " $* " in
  *"/examples/demo_cnn.json --config tiny --backend rtl --check --json --rtl-model checked "*)
    echo '{"bit_exact": false, "cycles": 5, "mismatches": [{"output": "y", "mismatched_elements": 7, "max_abs_diff": 2}]}'
    exit 0 ;;
esac
echo "[1234] %%Error: loom_postop.sv:301: Assertion failed in TOP.loom_fabric.u_postop.LockStep_A: first" >&2
echo "[1236] %%Error: loom_postop.sv:301: Assertion failed in TOP.loom_fabric.u_postop.LockStep_A: second" >&2
echo "loom: error: rtl device: an RTL assertion failed at cycle 1234 (message on stderr; rerun with --wave file.fst)" >&2
exit 1
"""


def main():
    loom, root = os.path.abspath(sys.argv[1]), sys.argv[2]
    with tempfile.TemporaryDirectory() as d:
        stub = os.path.join(d, "loom")
        with open(stub, "w") as f:
            f.write(STUB % {"loom": loom})
        os.chmod(stub, 0o755)
        out = os.path.join(d, "reg")
        r = subprocess.run(["bash", os.path.join(root, "scripts", "regress.sh"), "--backend", "rtl", "--loom", stub,
                            "-o", out, "-j", "2"], capture_output=True, text=True, timeout=600)
        assert r.returncode != 0, (r.stdout, r.stderr)
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        assert res["points"] > 10 and res["passed"] == 0, res
        seen_graph = seen_bench = seen_mismatch = False
        for i, run in enumerate(res["runs"]):
            name = run["name"].split(".", 1)[1]  # rtl.ENTRY@CONFIG
            entry, cfg = name.split("@")
            with open(os.path.join(out, "runs", "%d.out" % i)) as f:
                log = f.read()
            first = [l for l in log.splitlines() if l.startswith("first: ")]
            repro = [l for l in log.splitlines() if l.startswith("reproduce: ")]
            assert len(first) == 1 and len(repro) == 1, log
            cmd = repro[0][len("reproduce: "):]
            words = shlex.split(cmd)
            for want in (["--backend", "rtl"], ["--config", cfg], ["--seed", "1"], ["--rtl-model", "checked"]):
                assert any(words[k:k + 2] == want for k in range(len(words))), (want, cmd)
            wave = "%s_%s.fst" % (entry, cfg)
            if words[1] == "run":
                assert words[-2:] == ["--wave", wave], cmd
                seen_graph = True
            else:
                assert words[0] == "LOOM_RTL_TRACE=" + wave and words[2] == "bench", cmd
                seen_bench = True
            if name == "demo_cnn@tiny":
                assert first[0] == "first: output y: 7 elements differ from the direct reference, max |diff| 2", log
                seen_mismatch = True
                demo = words
            else:
                # The first of the two assertions, not a later one or the summary line.
                assert first[0].startswith("first: [1234] %Error: ") and first[0].endswith(": first"), log
        assert seen_graph and seen_bench and seen_mismatch
        # The printed command, run with the real loom, reproduces the entry
        # (which passes on a sound fabric) and writes its waves.
        demo[0] = loom
        r = subprocess.run(demo, capture_output=True, text=True, timeout=300, cwd=d)
        if "not verilated into this build" not in r.stderr:
            assert r.returncode == 0 and json.loads(r.stdout)["bit_exact"] is True, r.stderr
            assert os.path.getsize(os.path.join(d, "demo_cnn_tiny.fst")) > 100
    print("ok: %d failing entries, each with its first problem and a command that reproduces it" % res["points"])


if __name__ == "__main__":
    main()
