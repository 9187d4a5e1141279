#!/usr/bin/env python3
"""scripts/regress.sh: the regression list through the launcher of
`loom experiment` (local processes here; Slurm in
serve.cli.Experiment.test_slurm_job_array_matches_local_run): every entry of
the backend passes, results.json/csv list them, a second run resumes (runs
nothing that passed; retries what failed), bad arguments (also --coverage's)
are one line.

usage: regress_launcher_test.py LOOM ROOT
"""
import json
import os
import subprocess
import sys
import tempfile


def main():
    loom, root = sys.argv[1], sys.argv[2]
    script = os.path.join(root, "scripts", "regress.sh")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "reg")
        r = subprocess.run(["bash", script, "--backend", "ref", "--loom", loom, "-o", out, "-j", "2"],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        with open(os.path.join(out, "results.json")) as f:
            res = json.load(f)
        listed = subprocess.run([sys.executable, os.path.join(root, "tests", "e2e", "run_regression.py"), "--loom",
                                 loom, "--root", root, "--list", "--tag", "fast", "--backend", "ref"],
                                capture_output=True, text=True, check=True).stdout.strip().split(";")
        assert res["kind"] == "commands" and res["points"] == len(listed) == res["passed"], res
        assert sorted(x["name"] for x in res["runs"]) == sorted("ref." + c for c in listed)
        for i in range(res["points"]):
            assert os.path.exists(os.path.join(out, "runs", "%d.out" % i))
        with open(os.path.join(out, "results.csv")) as f:
            assert len(f.read().strip().splitlines()) == res["points"] + 1
        # A failed entry (its record says exit 1) is run again; nothing else is.
        meta = os.path.join(out, "runs", "0.meta.json")
        with open(meta) as f:
            m = json.load(f)
        m["exit"] = 1
        with open(meta, "w") as f:
            json.dump(m, f)
        r = subprocess.run(["bash", script, "--backend", "ref", "--loom", loom, "-o", out],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        assert "%d of %d points already finished" % (res["points"] - 1, res["points"]) in r.stderr, r.stderr
        assert r.stderr.count(": ok (") == 1, r.stderr
        # A failing entry prints how to reproduce it: the command with its
        # seed, and the fabric's waves where the command can write them. A
        # loom that fails every run stands in for a failing build.
        runner = os.path.join(root, "tests", "e2e", "run_regression.py")
        for entry, backend, want in (("demo_cnn@tiny", "rtl", "--seed 1 --wave demo_cnn_tiny.fst"),
                                     ("gemm_small@tiny", "ref", "--check --json --seed 1")):
            r = subprocess.run([sys.executable, runner, "--loom", "false", "--root", root, "--backend", backend,
                                "--entry", entry], capture_output=True, text=True, timeout=60)
            assert r.returncode == 1, (r.returncode, r.stdout, r.stderr)
            assert "reproduce: false " in r.stdout and r.stdout.rstrip().splitlines()[-2].endswith(want), r.stdout
            err = r.stderr.strip().splitlines()
            assert len(err) == 1 and err[0].startswith("loom: error: %s failed on %s; reproduce: " % (entry, backend)), r.stderr
        # Bad arguments: one line, non-zero.
        for args, needle in ((["--tag", "weekly"], "--tag"), (["--launcher", "pbs"], "launcher"),
                             (["--frobnicate"], "unknown argument"), (["-j", "0"], "-j"),
                             (["--check"], "go with --coverage"),
                             (["--coverage", "--launcher", "slurm"], "locally"),
                             (["--coverage"], "leave out --loom")):
            r = subprocess.run(["bash", script, "--loom", loom, "-o", os.path.join(d, "bad")] + args,
                               capture_output=True, text=True, timeout=120)
            lines = [l for l in r.stderr.splitlines() if l.strip()]
            assert r.returncode != 0 and len(lines) == 1 and lines[0].startswith("loom: error:") and needle in lines[0], r.stderr
    print("ok: %d entries on ref through the local launcher, resume retried 1" % res["points"])


if __name__ == "__main__":
    main()
