#!/usr/bin/env python3
"""Serving benchmarks of docs/serving.md, on the tlm backend:

  batching   deadline-aware vs fixed: the highest sustained load scale at which
             every stream's p99 stays within its SLO, by bisection, each policy at
             its best setting of a sweep (examples/serve_mix_workload.yaml)
  scheduling dynamic vs static p99 on a bursty three-stream mix, and auto's
             worst loss to the better of the two (examples/serve_bursty_workload.yaml)
  fairness   STP and ANTT of dynamic vs an equal static split for 2-, 3- and
             4-stream mixes

Usage: bench_serving.py LOOM_BINARY ROOT [batching|scheduling|fairness ...]
Prints one table per benchmark; takes a few minutes (not a CTest test).
"""
import json
import os
import subprocess
import sys
import tempfile

LOOM, ROOT = sys.argv[1], sys.argv[2]
WHICH = sys.argv[3:] or ["batching", "scheduling", "fairness"]
CACHE = os.path.join(tempfile.gettempdir(), "loom_serve_bench_cache")


def serve(workload, *args):
    r = subprocess.run([LOOM, "serve", workload, "--backend", "tlm", "--json", "--cache", CACHE] + [str(a) for a in args],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("serve failed: " + r.stderr.strip())
    return json.loads(r.stdout)


def within_slo(res):
    return all(s["latency"]["p99_us"] is not None and s["latency"]["p99_us"] <= s["slo_ms"] * 1000 for s in res["streams"])


def sustained(w, seed, *args, lo=0.25, hi=8.0, steps=9):
    """Highest load scale at which every stream's p99 meets its SLO, by
    bisection on [lo, hi] (lo must pass, hi must fail; resolution (hi-lo)/2^steps)."""
    ok = lambda ls: within_slo(serve(w, "--load-scale", "%.6f" % ls, "--seed", seed, *args))
    if not ok(lo):
        return 0.0
    if ok(hi):
        return hi
    for _ in range(steps):
        mid = (lo + hi) / 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo


FIXED_GRID = [(mb, md) for mb in (1, 2, 4, 8, 16, 32) for md in (0.1, 0.25, 0.5, 1.0, 2.0)]
DEADLINE_GRID = [(mb, sm) for mb in (8, 16, 32) for sm in (0.05, 0.1, 0.2)]


def batching():
    # Both policies get their best setting per seed from a sweep (fixed: max
    # batch x max queue delay, as Triton's dynamic batcher is tuned; deadline:
    # max batch x slack margin); the load each sustains is found by bisection.
    w = os.path.join(ROOT, "examples", "serve_mix_workload.yaml")
    fixed, dead, default, fifo = [], [], [], []
    for seed in (1, 2, 3):
        best, arg = 0.0, None
        for mb, md in FIXED_GRID:
            s = sustained(w, seed, "--batching", "fixed", "--max-batch", mb, "--max-queue-delay-ms", md)
            if s > best:
                best, arg = s, (mb, md)
        dbest, darg = 0.0, None
        for mb, sm in DEADLINE_GRID:
            s = sustained(w, seed, "--batching", "deadline", "--max-batch", mb, "--slack-margin", sm)
            if s > dbest:
                dbest, darg = s, (mb, sm)
        dflt = sustained(w, seed, "--batching", "fixed")  # the workload's own max_batch 8, 1 ms
        nogroup = sustained(w, seed, "--batching", "deadline", "--max-batch", darg[0], "--slack-margin", darg[1],
                            "--no-shape-grouping")
        fixed.append(best)
        dead.append(dbest)
        default.append(dflt)
        fifo.append(nogroup)
        print("batching: seed %d  fixed (workload's 8, 1 ms) %.3f  fixed best %.3f (max_batch %s, delay %s ms)  "
              "deadline best %.3f (max_batch %s, margin %s)  same without shape grouping %.3f" %
              (seed, dflt, best, arg[0] if arg else "-", arg[1] if arg else "-", dbest, darg[0], darg[1], nogroup),
              flush=True)
    mean = lambda v: sum(v) / len(v)
    f, d, f0, g = mean(fixed), mean(dead), mean(default), mean(fifo)
    print("batching: deadline/fixed(8, 1 ms) sustained load = %.3f / %.3f = %.2fx" % (d, f0, d / f0 if f0 else float("inf")))
    print("batching: deadline (FIFO, no shape grouping)/best fixed = %.3f / %.3f = %.2fx" % (g, f, g / f if f else float("inf")))
    print("batching: deadline/best fixed sustained load = %.3f / %.3f = %.2fx (target >= 1.3x)" %
          (d, f, d / f if f else float("inf")))


BALANCED = """config: default
duration_ms: 300
seed: 1
batching: fixed
max_batch: 4
max_queue_delay_ms: 0.3
streams:
""" + "".join("""  - name: b%d
    model: gemm_chain
    hidden: 64
    ffn: 256
    slo_ms: 3
    arrival: {poisson: {rate: 2500}}
    seq_len: {values: [32]}
""" % i for i in range(4))


def scheduling():
    bal = os.path.join(tempfile.mkdtemp(prefix="loom_bal_"), "balanced_workload.yaml")
    with open(bal, "w") as f:
        f.write(BALANCED)
    cases = [("bursty", os.path.join(ROOT, "examples", "serve_bursty_workload.yaml")),
             ("mix", os.path.join(ROOT, "examples", "serve_mix_workload.yaml")), ("balanced", bal)]
    worst_auto, reductions = 0.0, []
    print("scheduling: workload load seed  static_p99_ms dynamic_p99_ms auto_p99_ms auto_used")
    for name, w in cases:
        for ls in (0.6, 0.8, 1.0, 1.2, 1.4):
            for seed in (1, 2, 3):
                p = {}
                used = None
                for s in ("static", "dynamic", "auto"):
                    r = serve(w, "--scheduling", s, "--load-scale", ls, "--seed", seed)
                    p[s] = r["latency"]["p99_us"] / 1000
                    if s == "auto":
                        used = r["scheduling"]["used"]
                if name == "bursty":
                    reductions.append(1 - p["dynamic"] / p["static"])
                worst_auto = max(worst_auto, p["auto"] / min(p["static"], p["dynamic"]) - 1)
                print("scheduling: %-8s %.1f  %d    %8.3f      %8.3f      %8.3f   %s" %
                      (name, ls, seed, p["static"], p["dynamic"], p["auto"], used))
    print("scheduling: on the bursty mix dynamic lowers p99 vs static by %.1f%% (min) .. %.1f%% (max), mean %.1f%% "
          "(target >= 30%%)" % (100 * min(reductions), 100 * max(reductions), 100 * sum(reductions) / len(reductions)))
    print("scheduling: auto's worst p99 loss to the better policy over all %d cases: %.2f%% (target <= 3%%)" %
          (3 * 5 * len(cases), 100 * worst_auto))


MIX_STREAM = """  - name: s{i}
    model: gemm_chain
    hidden: 64
    ffn: {ffn}
    slo_ms: 4
    arrival: {{bursty: {{on_rate: {on}, off_rate: 1000, on_ms: {onms}, off_ms: {offms}}}}}
    seq_len: {{values: [16, 32, 64], weights: [3, 2, 1]}}
"""


def fairness():
    params = [(256, 30000, 4, 20), (256, 25000, 5, 32), (128, 20000, 3, 17), (128, 28000, 6, 41)]
    d = tempfile.mkdtemp(prefix="loom_mix_")
    # ANTT of a stream is its mean latency shared over alone on the whole
    # fabric, so no scheduler gets dynamic's ANTT below about 1: 1 / (static
    # ANTT) is the best ratio any dynamic scheduler could reach on the mix.
    print("fairness: batching  streams  STP static  STP dynamic  ratio   ANTT static  ANTT dynamic  ratio  "
          "bound (ANTT 1)")
    for n in (2, 3, 4):
        text = "config: default\nduration_ms: 400\nseed: 1\nbatching: fixed\nmax_batch: 4\nmax_queue_delay_ms: 0.3\nstreams:\n"
        for i in range(n):
            ffn, on, onms, offms = params[i]
            text += MIX_STREAM.format(i=i, ffn=ffn, on=on, onms=onms, offms=offms)
        path = os.path.join(d, "mix%d_workload.yaml" % n)
        with open(path, "w") as f:
            f.write(text)
        for b in ("fixed", "none", "deadline"):
            st = serve(path, "--scheduling", "static", "--batching", b)["fairness"]
            dy = serve(path, "--scheduling", "dynamic", "--batching", b)["fairness"]
            print("fairness: %-8s  %d        %6.3f      %6.3f     %5.2fx   %6.3f       %6.3f      %5.2fx  %5.2fx" %
                  (b, n, st["stp"], dy["stp"], dy["stp"] / st["stp"], st["antt"], dy["antt"], dy["antt"] / st["antt"],
                   1 / st["antt"]))


for b in WHICH:
    {"batching": batching, "scheduling": scheduling, "fairness": fairness}[b]()
