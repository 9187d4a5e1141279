#!/usr/bin/env python3
"""Writes the generated seed corpora of the fuzz targets (docs/security.md):
small ONNX models built by hand (QDQ and QOperator forms, deterministic, no
ONNX Runtime), tensors in both formats, small complete result files of each
kind (serve, sweep, tune, points.json), and plans and program plans compiled
by the `loom` binary from them and from the example graphs, so the binary
seeds always match the current formats.

usage: make_seeds.py LOOM_BINARY OUT_DIR
"""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def model(nodes, inputs, outputs, inits, opset=13):
    g = helper.make_graph(nodes, "seed", inputs, outputs, inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def scalar(name, dtype, v):
    return helper.make_tensor(name, dtype, [], [v])


def qdq(x, q, dq, s, z):
    return [helper.make_node("QuantizeLinear", [x, s, z], [q]), helper.make_node("DequantizeLinear", [q, s, z], [dq])]


def qdq_conv(groups=1, c=4, relu=True):
    rng = np.random.default_rng(1)
    w = rng.integers(-20, 20, (c, c // groups, 3, 3)).astype(np.int8)
    inits = [scalar("s", TensorProto.FLOAT, 0.05), scalar("z", TensorProto.INT8, 0),
             numpy_helper.from_array(w, "wq"), scalar("ws", TensorProto.FLOAT, 0.02),
             scalar("wz", TensorProto.INT8, 0), numpy_helper.from_array(np.zeros(c, np.float32), "b")]
    nodes = qdq("x", "xq", "xd", "s", "z")
    nodes += [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
              helper.make_node("Conv", ["xd", "wd", "b"], ["c"], pads=[1, 1, 1, 1], group=groups)]
    last = "c"
    if relu:
        nodes.append(helper.make_node("Relu", ["c"], ["r"]))
        last = "r"
    nodes += qdq(last, "yq", "y", "s", "z")
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, 6, 6])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, c, 6, 6])], inits)


def qdq_matmul_softmax():
    rng = np.random.default_rng(2)
    w = rng.integers(-20, 20, (8, 8)).astype(np.int8)
    inits = [scalar("s", TensorProto.FLOAT, 0.05), scalar("z", TensorProto.INT8, 0),
             numpy_helper.from_array(w, "wq"), scalar("ws", TensorProto.FLOAT, 0.02),
             scalar("wz", TensorProto.INT8, 0)]
    nodes = qdq("x", "xq", "xd", "s", "z")
    nodes += [helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"]),
              helper.make_node("MatMul", ["xd", "wd"], ["m"]),
              helper.make_node("Softmax", ["m"], ["sm"], axis=-1)]
    nodes += qdq("sm", "yq", "y", "s", "z")
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 8])], inits)


def qlinear_conv():
    inits = [scalar("xs", TensorProto.FLOAT, 0.5), scalar("xz", TensorProto.UINT8, 1),
             numpy_helper.from_array(np.ones((2, 1, 1, 1), np.uint8), "w"),
             helper.make_tensor("ws", TensorProto.FLOAT, [1], [0.25]), scalar("wz", TensorProto.UINT8, 0),
             scalar("ys", TensorProto.FLOAT, 1.0), scalar("yz", TensorProto.UINT8, 3)]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], name="qconv")
    return model([node], [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 1, 4, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 2, 4, 4])], inits)


def pool_add():
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("AveragePool", ["x"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("Add", ["p", "a"], ["y"])]
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 2, 2])], [])


def new_forms():
    """Opset 20, IR 10 (read through opset_adapt): Identity-fed weights, Gelu,
    Split with num_outputs, Concat, ReduceMean with an axes input."""
    w = numpy_helper.from_array(np.ones((4, 4), np.float32), "w")
    axes = numpy_helper.from_array(np.array([1], np.int64), "axes")
    nodes = [helper.make_node("Identity", ["w"], ["w2"]), helper.make_node("MatMul", ["x", "w2"], ["h"]),
             helper.make_node("Gelu", ["h"], ["g"], approximate="tanh"),
             helper.make_node("Split", ["g"], ["a", "b"], axis=1, num_outputs=2),
             helper.make_node("Concat", ["b", "a"], ["c"], axis=1),
             helper.make_node("ReduceMean", ["c", "axes"], ["y"], keepdims=1)]
    g = helper.make_graph(nodes, "seed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 1])], [w, axes])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 10
    return m


def qdq_resize():
    """DQ -> Resize -> Q twice: a linear x2 (loom.QLinearResize on the
    fabric) and a nearest x3 between equal parameters (on the integers)."""
    inits = [scalar("s", TensorProto.FLOAT, 0.05), scalar("z", TensorProto.INT8, 0),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "sc"),
             numpy_helper.from_array(np.array([1, 2, 12, 12], np.int64), "sz")]
    nodes = qdq("x", "xq", "xd", "s", "z")
    nodes += [helper.make_node("Resize", ["xd", "", "sc"], ["r1"], mode="linear")]
    nodes += qdq("r1", "r1q", "r1d", "s", "z")
    nodes += [helper.make_node("Resize", ["r1d", "", "", "sz"], ["r2"], mode="nearest",
                               coordinate_transformation_mode="asymmetric", nearest_mode="floor")]
    nodes += qdq("r2", "yq", "y", "s", "z")
    return model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 2, 2])],
                 [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 12, 12])], inits)


def latency(base):
    return {"p50_us": base, "p95_us": base * 2, "p99_us": base * 3, "p999_us": base * 4, "mean_us": base * 1.5,
            "max_us": base * 5}


def serve_result(live=False):
    """A complete `loom serve` result, small: every field that the merge and
    the report read (serve/result_check.h), with two streams."""
    streams = []
    for i, name in enumerate(("short", "bursty")):
        streams.append({
            "name": name, "model": "gemm_chain/16/32", "priority": i, "slo_ms": 3.0 + i, "submitted": 40,
            "completed": 38, "dropped": 2, "failed": 0, "throughput_rps": 1900.0, "latency": latency(100.0 + i),
            "queue_wait": dict(latency(10.0), histogram=[{"lo_us": 0, "hi_us": 10, "count": 30},
                                                         {"lo_us": 10, "hi_us": None, "count": 8}]),
            "slo_attainment": 0.9, "isolated_mean_latency_us": 90.0, "slowdown": 1.2,
            "latency_cdf_us": [100.0 + k for k in range(101)],
            "latency_over_time": [{"start_ms": 0, "end_ms": 10, "completed": 20, "p50_us": 100, "p99_us": 300},
                                  {"start_ms": 10, "end_ms": 20, "completed": 0, "p50_us": None, "p99_us": None}]})
    r = {"kind": "serve", "workload": "w_workload.yaml", "backend": "tlm", "mode": "live" if live else "sim",
         "config": "tiny", "seed": 3, "load_scale": 1.0, "batching": "fixed", "max_batch": 4,
         "max_queue_delay_ms": 0.2, "slack_margin": 0.1, "shape_grouping": True,
         "scheduling": {"requested": "auto", "used": "dynamic", "reason": "fewer misses"}, "admission": False,
         "duration_ms": 20, "makespan_ms": 21.0, "submitted": 80, "completed": 76, "failed": 0, "dropped": 4,
         "throughput_rps": 3800.0, "latency": latency(100.0), "streams": streams, "batch_sizes": {"1": 20, "4": 14},
         "cores": [{"core": 0, "port": 0, "busy_us": 9000, "utilization": 0.45, "batches": 17},
                   {"core": 1, "port": 1, "busy_us": 8000, "utilization": 0.4, "batches": 17}],
         "core_imbalance": 0.06, "fairness": {"jain": 0.99, "antt": 1.2, "stp": 1.7}, "trace": None}
    if live:
        r["live"] = {"completion": "poll", "device_runs": 34, "checked_runs": 34, "output_mismatches": 0,
                     "device_errors": 1, "host_timeouts": 0, "max_retries": 2, "retried_requests": 4,
                     "faults_injected": [{"fault": "hang@5ms", "kind": "hang", "core": 1, "at_ms": 5, "for_ms": 2,
                                          "applied_ms": 5.1, "lifted_ms": 7.1}],
                     "failures": [{"reason": "timeout", "batches": 1, "requests_failed": 0}],
                     "rss_mib": [{"requests": 0, "mib": 40.0}, {"requests": 80, "mib": 41.0}]}
    return r


def sweep_result():
    runs = []
    for b in ("fixed", "deadline"):
        for load in (0.5, 1.0):
            runs.append({"config": "tiny", "batching": b, "scheduling": "dynamic", "scheduling_used": "dynamic",
                         "load_scale": load, "seed": 1, "workload": "w_workload.yaml", "max_batch": 4,
                         "submitted": 80, "completed": 78, "dropped": 2, "throughput_rps": 3000.0 * load,
                         "p50_us": 90.0, "p95_us": 200.0, "p99_us": 300.0 * load, "p999_us": None,
                         "slo_attainment": 0.95, "jain": 0.99, "antt": 1.1, "stp": 1.8, "core_imbalance": 0.1,
                         "short.p99_us": 250.0, "short.slo_attainment": 1.0, "result": "runs/%d.json" % len(runs)})
    return {"kind": "sweep", "sweep": "/tmp/s_sweep.yaml", "points": len(runs),
            "settings": ["config", "batching", "scheduling", "workload", "max_batch"],
            "wall": {"launcher": "local", "span_seconds": 4.0, "point_seconds_mean": 2.0, "runs_per_hour": 3600.0},
            "runs": runs}


def points(kind="serve"):
    if kind == "commands":
        return {"format": "loom-sweep-points", "version": 1, "kind": "commands", "sweep": "/tmp/c.yaml",
                "points": [{"id": 0, "name": "a", "argv": ["true"]}, {"id": 1, "name": "b", "argv": ["false", "x"]}]}
    pts = []
    for b in ("fixed", "deadline"):
        params = {"workload": "/tmp/w_workload.yaml", "batching": b, "max_batch": 4, "admission": True,
                  "loads": 1.0, "seeds": 1}
        pts.append({"id": len(pts), "params": params, "args": ["/tmp/w_workload.yaml", "--batching", b]})
    return {"format": "loom-sweep-points", "version": 1, "sweep": "/tmp/s_sweep.yaml", "points": pts}


def tune_result():
    def lat(base):
        return {"requests": 50, "mean_us": base, "p50_us": base, "p95_us": base * 2, "p99_us": base * 3,
                "p999_us": base * 4, "cdf_us": [base + k for k in range(101)]}

    def timeline():
        return [{"core": 0, "stream": 0, "start_us": 3000.0, "end_us": 3100.0, "requests": 2, "seq": 16, "cores": 1,
                 "layers": [["gemm0", 3000.0, 3050.0], ["gemm1", 3050.0, 3100.0]]},
                {"core": 1, "stream": 0, "start_us": 3010.0, "end_us": 3090.0, "requests": 1, "seq": 8, "cores": 1}]

    mapping = {"gemm_chain/16/32": {"choice": "rows=8", "why": "lowest predicted",
                                    "placements": [{"cores": 1, "servers": 2, "service_us": 50.0,
                                                    "modelled_latency_us": 80.0, "chosen": True},
                                                   {"cores": 2, "servers": 1, "service_us": 30.0,
                                                    "modelled_latency_us": "unstable", "chosen": False}]},
               "bert/64": {"choice": "buckets=16,64", "buckets": [{"seq": 16, "choice": "rows=16"},
                                                                  {"seq": 64, "choice": "rows=32"}],
                           "plans": 2, "padding": 0.1, "expected_cycles_per_request": 5000.0, "compile_ms": 12.0}}
    rounds = []
    for k in (1, 2):
        rounds.append({
            "round": k, "plan_error_before": 0.2, "plan_error_after": 0.05, "gap_recovered_mean": 0.8,
            "prediction_error": [{"kind": "gemm", "rows": 8, "error_before": 0.2, "error_after": 0.04},
                                 {"kind": "gemm", "rows": 16, "error_before": 0.1, "error_after": 0.03}],
            "decisions_changed": [{"seq": 16, "batch": 1, "from": "rows=8", "to": "rows=16", "why": "faster"}],
            "mapping": mapping, "plans_recompiled": ["rows=16"], "compiler_plans_compared": 3,
            "compiler_decisions_changed": [{"model": "m", "choice": "rows=16", "pass": "fuse", "node": "n0",
                                            "before": "split", "after": "fused", "why": "cheaper"}],
            "swap": {"at_ms": 3.0, "submitted": 50, "completed": 50, "dropped": 0, "lost": 0,
                     "reordered_within_stream": 0},
            "latency": lat(90.0), "after_swap": lat(80.0 - k),
            "profile": [{"model": "m", "choice": "rows=16", "layers": [{"name": "gemm0", "kind": "gemm",
                                                                        "predicted": 900, "measured": 1000}]}],
            "counters": [{"model": "m", "choice": "rows=16", "rows": 16, "compute_share": 0.6, "stall_mem_share": 0.3,
                          "predicted": {"cycles": 900},
                          "measured": {"cycles": 1000, "macs": 4096, "bytes_rd": 2048, "bytes_wr": 512},
                          "error": {"cycles": -0.1, "macs": 0.0, "bytes_rd": 0.01, "bytes_wr": 0.0}}],
            "timeline": timeline(),
            "attribution": {"gain_us": 20.0, "offline_recompile_us": 12.0, "refit_us": 8.0, "gain_p99_us": 60.0,
                            "offline_recompile_p99_us": 30.0, "refit_p99_us": 30.0}})
    return {"kind": "tune", "workload": "w_workload.yaml", "backend": "tlm", "config": "tiny", "seed": 1,
            "rounds_requested": 2, "swap_at_ms": 3.0, "initial_mapping": mapping,
            "baseline": {"latency": lat(110.0), "after_swap": lat(100.0), "timeline": timeline()},
            "best_per_shape": {"after_swap": lat(75.0), "mapping": mapping},
            "offline_recompile": {"after_swap": lat(88.0), "gap_recovered_mean": 0.5, "mapping": mapping},
            "rounds": rounds, "swap_ok": True,
            "target": {"metric": "mean", "baseline_us": 100.0, "best_per_shape_us": 75.0, "gap_us": 25.0,
                       "recovered_after_last_round": 0.84, "target": 0.8, "met": True}}


def result_seeds(out):
    """The result target's seeds: one result of each kind, points.json of
    both kinds, and a serve result that is also a points.json (so the merge
    runs from the first input on)."""
    both = serve_result()
    both.update({k: v for k, v in points().items() if k != "kind"})
    docs = {"serve": serve_result(), "serve_live": serve_result(live=True), "sweep": sweep_result(),
            "tune": tune_result(), "points": points(), "points_commands": points("commands"),
            "serve_and_points": both}
    for name, doc in docs.items():
        write(os.path.join(out, name + ".json"), (json.dumps(doc, indent=1) + "\n").encode())


def write(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def main():
    loom, out = sys.argv[1], sys.argv[2]
    onnx_dir = os.path.join(out, "onnx")
    models = {"qdq_conv": qdq_conv(), "qdq_dwconv": qdq_conv(groups=4, relu=False),
              "qdq_matmul_softmax": qdq_matmul_softmax(), "qlinear_conv": qlinear_conv(), "pool_add": pool_add(),
              "new_forms_opset20": new_forms(), "qdq_resize": qdq_resize()}
    for name, m in models.items():
        write(os.path.join(onnx_dir, name + ".onnx"), m.SerializeToString())

    t = os.path.join(out, "tensor")
    rng = np.random.default_rng(3)
    for dt in (np.int8, np.uint8, np.int32, np.float32):
        a = (rng.standard_normal((2, 3)) * 10).astype(dt)
        write(os.path.join(t, f"{np.dtype(dt).name}.pb"), numpy_helper.from_array(a, "t").SerializeToString())
        os.makedirs(t, exist_ok=True)
        np.save(os.path.join(t, f"{np.dtype(dt).name}.npy"), a)

    def compile_(src, dst):
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        r = subprocess.run([loom, "compile", src, "--config", "tiny", "-o", dst], capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"make_seeds: loom compile {src} failed: {r.stderr.strip()}")

    compile_(os.path.join(ROOT, "examples", "demo_cnn.json"), os.path.join(out, "plan", "demo_cnn.plan"))
    for name in ("qdq_conv", "qdq_matmul_softmax", "pool_add"):
        compile_(os.path.join(onnx_dir, name + ".onnx"), os.path.join(out, "program_plan", name + ".plan"))
    result_seeds(os.path.join(out, "result"))
    print(f"make_seeds: wrote the seed corpora under {out}")


if __name__ == "__main__":
    main()
