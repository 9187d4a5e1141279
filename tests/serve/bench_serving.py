#!/usr/bin/env python3
"""Serving benchmarks of docs/serving.md, on the tlm backend:

  batching   deadline-aware vs fixed: the highest sustained load scale at which
             every stream's p99 stays within its SLO, by bisection, each policy at
             its best setting of a sweep (examples/serve_mix_workload.yaml)
  scheduling dynamic vs static p99 on a bursty three-stream mix, and auto's
             worst loss to the better of the two (examples/serve_bursty_workload.yaml)
  fairness   STP and ANTT of dynamic vs an equal static split for 2-, 3- and
             4-stream mixes
  contention the port-contention stretch measured on tlm for every set of
             batches that meet on a port (each batch with those beside it,
             averaged over four start phases, and the worst phase) on tiny
             and small
  portlimit  what max_per_port changes on small (4 cores, 2 ports): p99,
             throughput and sustained load with and without the limit, same
             seeds, measured stretch (and the assumed 0.15 for comparison)

Usage: bench_serving.py LOOM_BINARY ROOT [batching|scheduling|fairness ...]
Prints one table per benchmark; takes a few minutes (not a CTest test).
"""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile

LOOM, ROOT = sys.argv[1], sys.argv[2]
WHICH = sys.argv[3:] or ["batching", "scheduling", "fairness", "contention", "portlimit"]
CACHE = os.path.join(tempfile.gettempdir(), "loom_serve_bench_cache")


def scratch(prefix):
    """A new temporary folder, removed when the benchmark ends."""
    d = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, d, True)
    return d


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
    bal = os.path.join(scratch("loom_bal_"), "balanced_workload.yaml")
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
    d = scratch("loom_mix_")
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


CONTENTION_MODELS = [
    ("gemm_chain", "hidden: 64, ffn: 256, layers: 2", (16, 64)),
    ("gemm_chain", "hidden: 256, ffn: 1024", (4, 16)),
    ("gemm_chain", "hidden: 1024, ffn: 4096", (1,)),
    ("zoo:mobilenetv2:slice=stem", "", (None,)),
]


def contention():
    # As many requests at t = 0 as the fabric has cores x batch: every core
    # starts a batch at once, so each port has all its cores busy.
    d = scratch("loom_port_")
    print("contention: config  model                               seq  batch  cores/port  with                    "
          "alone us   stretch  worst phase")
    seen = set()
    for config, cores in (("tiny", 2), ("small", 4)):
        for model, params, seqs in CONTENTION_MODELS:
            for seq in seqs:
                for batch in (1, 4):
                    if seq is None and batch > 1:
                        continue
                    trace = os.path.join(d, "t.trace")
                    with open(trace, "w") as f:
                        f.write(("0 %d\n" % seq if seq else "0\n") * (cores * batch))
                    w = os.path.join(d, "c_workload.yaml")
                    with open(w, "w") as f:
                        f.write("config: %s\nduration_ms: 1\nbatching: %s\nmax_batch: %d\nmax_queue_delay_ms: 0\n"
                                "streams:\n  - {name: a, model: \"%s\", %sslo_ms: 10000, arrival: {trace: {file: %s}}}\n"
                                % (config, "fixed" if batch > 1 else "none", batch, model,
                                   params + ", " if params else "", trace))
                    res = serve(w)
                    # Every set of batches that met on a port in this run: the
                    # batch, the batches beside it, the stretch averaged over
                    # the four start phases measured and the worst of them.
                    for st in res["service_times"]["port_stretch"]:
                        others = ", ".join("%s/%s" % (o["seq"] if o["seq"] else "-", o["batch"]) for o in st["with"])
                        key = (config, st["model"], st["seq"], st["batch"], others)
                        if key in seen:
                            continue
                        seen.add(key)
                        worst = max(st["phase_cycles"]) / st["alone_cycles"]
                        alone = [t["us"] for t in res["service_times"]["table"] if t["model"] == st["model"] and
                                 t["seq"] == st["seq"] and t["batch"] == st["batch"]][0]
                        print("contention: %-6s  %-34s  %4s  %5d  %10d  %-22s  %9.1f  %7.3f  %7.3f" %
                              (config, st["model"], st["seq"] if st["seq"] else "-", st["batch"], st["port_cores"],
                               "seq/batch " + others, alone, st["stretch"], worst))


PORT_MIX = """config: small
duration_ms: 200
seed: 1
batching: fixed
scheduling: dynamic
max_batch: 4
max_queue_delay_ms: 0.3
streams:
  - name: qa
    model: gemm_chain
    hidden: 64
    ffn: 256
    layers: 2
    slo_ms: 4
    arrival: {poisson: {rate: 6000}}
    seq_len: {values: [16, 32, 64], weights: [4, 2, 1]}
  - name: wide
    model: gemm_chain
    hidden: 256
    ffn: 1024
    slo_ms: 6
    arrival: {bursty: {on_rate: 6000, off_rate: 500, on_ms: 5, off_ms: 10}}
    seq_len: {values: [4, 8]}
"""


def portlimit():
    d = scratch("loom_portlimit_")
    w = os.path.join(d, "port_mix_workload.yaml")
    with open(w, "w") as f:
        f.write(PORT_MIX)
    print("portlimit: " + w)
    print("portlimit: stretch   load  seed  limit  throughput rps   p99 ms (qa / wide / all)     SLO met   "
          "port waits  util")
    for pc in (None, 0.15):
        for load in (0.5, 1.0, 1.5):
            for seed in (1, 2, 3):
                for limit in (0, 1):
                    text = PORT_MIX + ("max_per_port: %d\n" % limit) + ("" if pc is None else "port_contention: %g\n" % pc)
                    p = os.path.join(d, "pl_workload.yaml")
                    with open(p, "w") as f:
                        f.write(text)
                    r = serve(p, "--load-scale", load, "--seed", seed)
                    lat = [s["latency"]["p99_us"] / 1000 for s in r["streams"]]
                    met = sum(s["slo_attainment"] * s["submitted"] for s in r["streams"]) / r["submitted"]
                    util = sum(c["utilization"] for c in r["cores"]) / len(r["cores"])
                    print("portlimit: %-8s  %4.1f  %4d  %5d  %14.0f   %6.3f / %6.3f / %6.3f   %7.3f  %10d  %5.3f" %
                          ("measured" if pc is None else "%.2f" % pc, load, seed, limit, r["throughput_rps"], lat[0],
                           lat[1], r["latency"]["p99_us"] / 1000, met, r["port_limit_waits"], util))
    # Sustained load: the highest load scale with every stream's p99 within its SLO.
    for limit in (0, 1):
        p = os.path.join(d, "pl%d_workload.yaml" % limit)
        with open(p, "w") as f:
            f.write(PORT_MIX + "max_per_port: %d\n" % limit)
        loads = [sustained(p, seed, lo=0.05, hi=4.0) for seed in (1, 2, 3)]
        print("portlimit: sustained load, max_per_port %d: %s (mean %.3f)" %
              (limit, " ".join("%.3f" % x for x in loads), sum(loads) / len(loads)))


for b in WHICH:
    {"batching": batching, "scheduling": scheduling, "fairness": fairness, "contention": contention,
     "portlimit": portlimit}[b]()
