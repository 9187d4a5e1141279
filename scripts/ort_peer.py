#!/usr/bin/env python3
"""ONNX Runtime as loom's numerical peer on the zoo models.

For each zoo model (scripts/zoo.py) this builds the quantized ONNX model and
its seeded input, runs

  * ONNX Runtime, CPU execution provider, ORT_ENABLE_ALL (the default level:
    QDQ groups become ORT's integer kernels QLinearConv / QLinearMatMul /
    QLinearSoftmax where its fusion rules allow), one thread -- the reference;
  * ONNX Runtime at ORT_DISABLE_ALL (the graph as written: DequantizeLinear ->
    float op -> QuantizeLinear) -- ORT against itself, to size the rounding
    noise that is inherent to the model rather than to loom;
  * loom: `loom run model.onnx --backend B --inputs input_0.pb --outputs DIR`
    for each backend asked for,

and compares every output element in units of the output's quantization step
(the graph outputs come out of a DequantizeLinear, so each float is
scale * (q - zero_point) and q is recovered exactly): identical, within 1 LSB,
or worse; with a backend, `loom compare` then names the first quantized
tensor inside the model whose agreement drops below ONNX Runtime's own floor
(docs/onnx.md). Prints a Markdown table; --doc FILE replaces the table between the
`<!-- ort-peer:begin -->` / `<!-- ort-peer:end -->` markers in FILE.

Usage:
  ort_peer.py [--models fast|all|NAME[,NAME...]] [--loom BIN] [--backends ref,tlm]
              [--work DIR] [--doc docs/zoo.md] [--seed N] [--cpu Haswell[,...]]
--cpu also runs ONNX Runtime under `qemu-x86_64 -cpu MODEL` (Debian's
qemu-user; its TCG emulates up to AVX2, so Haswell is an x86-64 CPU without
AVX-512 and without VNNI) and compares it element for element with the run on
this CPU; it exits 1 if any model's output differs between the two.
NAME is a variant key as printed by --list (e.g. resnet50/stem, bert/32).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo  # noqa: E402

FAST = ["resnet50/stem", "mobilenetv2/block", "bert/32"]


def variant_key(name, seq, slice_):
    return name + ("/%d" % seq if seq else "") + ("/" + slice_ if slice_ else "")


def all_variants():
    return {variant_key(*v): v for v in zoo.variants()}


ALL = ["resnet50/stem", "resnet50/stage1", "resnet50", "mobilenetv2/block", "mobilenetv2"] + \
    ["bert/%d" % L for L in zoo.BERT_SEQS]


def ort_run(model, feeds, level, optimized=None):
    """ONNX Runtime's outputs on `model` (a path or the serialized model): CPU
    execution provider, one thread, optimization `level`; `optimized`: a path
    where ONNX Runtime writes the graph it optimized."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.graph_optimization_level = level
    so.log_severity_level = 3
    if optimized:
        so.optimized_model_filepath = optimized
    s = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    return s.run(None, feeds)


def ort_kernels(model_path, tmpdir):
    """Counts of the kernels ORT_ENABLE_ALL actually runs (from its optimized graph)."""
    import collections

    import onnx
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    so.optimized_model_filepath = os.path.join(tmpdir, "ort_optimized.onnx")
    ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    m = onnx.load(so.optimized_model_filepath)
    c = collections.Counter(n.op_type for n in m.graph.node)
    integer = sum(v for k, v in c.items() if k.startswith("QLinear"))
    flt = sum(c.get(k, 0) for k in ("Conv", "MatMul", "Gemm", "FusedConv", "FusedMatMul", "FusedGemm"))
    return {"integer_kernels": integer, "float_conv_matmul": flt, "ops": dict(sorted(c.items()))}


def output_quant(model, out_name):
    """(scale, zero_point) of the DequantizeLinear producing a graph output."""
    from onnx import numpy_helper

    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if out_name in n.output:
            if n.op_type != "DequantizeLinear":
                raise RuntimeError("output %s is produced by %s, not DequantizeLinear" % (out_name, n.op_type))
            zp = inits[n.input[2]] if len(n.input) > 2 and n.input[2] else 0
            return float(inits[n.input[1]]), int(zp)
    raise RuntimeError("output %s has no producer" % out_name)


# ONNX Runtime's u8 x s8 kernels on x86-64 CPUs without VNNI (AVX2,
# AVX-512 without VNNI) multiply with vpmaddubsw, which adds each pair of
# u8 x s8 products in int16 with saturation; int8 activations are shifted to
# u8 first. With VNNI the sum is exact in int32. The two paths agree exactly
# when no pair can exceed int16: 2 * 255 * max|w| <= 32767, i.e. |w| <= 64,
# which reduce_range quantization (7-bit weights) guarantees.
INT16_MAX = 32767


def weight_pair_bound(model):
    """Largest |sum of two u8 x s8 products| any integer kernel of ONNX
    Runtime can form on the model's int8 weights: 2 * 255 * max|w_q| over the
    int8 weight initializers of Conv, ConvInteger, MatMul, MatMulInteger,
    Gemm, QLinearConv and QLinearMatMul (QDQ weights through their
    DequantizeLinear). Returns (bound, name of the worst weight)."""
    import numpy as np
    from onnx import numpy_helper

    inits = {t.name: t for t in model.graph.initializer}
    prod = {o: n for n in model.graph.node for o in n.output}
    weight_slots = {"Conv": (1,), "MatMul": (0, 1), "Gemm": (0, 1), "ConvInteger": (1,), "MatMulInteger": (0, 1),
                    "QLinearConv": (3,), "QLinearMatMul": (0, 3)}
    worst, where = 0, None
    for n in model.graph.node:
        for i in weight_slots.get(n.op_type, ()):
            if i >= len(n.input):
                continue
            name = n.input[i]
            if name in prod and prod[name].op_type == "DequantizeLinear":
                name = prod[name].input[0]
            t = inits.get(name)
            if t is None:
                continue
            w = numpy_helper.to_array(t)
            if w.dtype != np.int8 or w.size == 0:
                continue
            b = 2 * 255 * int(np.abs(w.astype(np.int64)).max())
            if b > worst:
                worst, where = b, name
    return worst, where


def to_q(y, scale, zp):
    import numpy as np

    return np.rint(np.asarray(y, np.float64) / scale).astype(np.int64) + zp


def compare(qa, qb, zp=0):
    """Element agreement in output LSB, the mean error, and the cosine
    similarity of the real values (the codes less the zero point, which
    broadcasts as numpy does). Two all-zero tensors have cosine 1, one
    all-zero tensor against another tensor cosine 0."""
    import numpy as np

    d = np.abs(qa.astype(np.int64) - qb.astype(np.int64))
    n = d.size
    a = (qa.astype(np.float64) - zp).ravel()
    b = (qb.astype(np.float64) - zp).ravel()
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if not d.any():
        cos = 1.0  # not 1 - 1e-16 from the float sums
    else:
        cos = float(np.dot(a, b) / (na * nb)) if na > 0 and nb > 0 else 0.0
    return {"elements": int(n), "identical": float((d == 0).sum()) / n if n else 1.0,
            "within_1": float((d <= 1).sum()) / n if n else 1.0, "differ": int((d != 0).sum()),
            "beyond_1": int((d > 1).sum()), "max_lsb": int(d.max()) if n else 0,
            "mean_lsb": float(d.mean()) if n else 0.0, "cosine": min(1.0, max(-1.0, cos))}


def run_loom(loom, backend, model_path, inputs, out_dir, timeout, config=None, check=False):
    """`loom run MODEL --backend B --inputs INPUTS... --outputs OUT_DIR`:
    (path of output_0.pb, None, seconds), or (None, its last error line,
    seconds)."""
    os.makedirs(out_dir, exist_ok=True)
    cmd = [loom, "run", model_path, "--backend", backend, "--outputs", out_dir]
    cmd += ["--inputs", *inputs] if inputs else []  # a model without graph inputs takes none
    if config:
        cmd += ["--config", config]
    if check:
        cmd.append("--check")
    t0 = time.time()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % timeout, time.time() - t0
    if r.returncode != 0:
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        return None, (lines[-1] if lines else "exit %d" % r.returncode), time.time() - t0
    p = os.path.join(out_dir, "output_0.pb")
    if not os.path.exists(p):
        return None, "no output_0.pb written", time.time() - t0
    return p, None, time.time() - t0


def run_compare(loom, model_path, input_pb, timeout):
    """`loom compare MODEL --inputs INPUT --json`: every quantized tensor of
    the model against ONNX Runtime, and the first whose agreement drops below
    ONNX Runtime's own floor ({"tensors", "first_drop": None or {"index",
    "node", "op", "identical", "floor", "reason"}}), or {"error": line}."""
    cmd = [loom, "compare", model_path, "--inputs", input_pb, "--json"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "loom compare timed out after %d s" % timeout}
    if r.returncode != 0:
        lines = [l for l in r.stderr.splitlines() if l.strip()]
        return {"error": lines[-1] if lines else "loom compare exited %d" % r.returncode}
    res = json.loads(r.stdout)
    out = {"tensors": len(res["layers"]), "first_drop": None}
    fd = res.get("first_drop")
    if fd:
        layer = res["layers"][fd["index"]]
        floor = layer.get("ort_floor") or {}
        out["first_drop"] = {"index": fd["index"], "node": layer["node"], "op": layer["op"],
                             "identical": layer["loom"]["identical"], "floor": floor.get("identical"),
                             "reason": fd["reason"]}
    return out


def first_line(e):
    """The first non-empty line of an exception's text (its type's name when it has none)."""
    lines = [l.strip() for l in str(e).splitlines() if l.strip()]
    return lines[0] if lines else type(e).__name__


def load_pb(path):
    import onnx
    from onnx import numpy_helper

    t = onnx.TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def cpu_features():
    """x86 features as numpy's CPUID probe sees them (under qemu: the emulated CPU's)."""
    try:
        from numpy._core._multiarray_umath import __cpu_features__ as f
    except ImportError:  # numpy < 2
        from numpy.core._multiarray_umath import __cpu_features__ as f
    return {"avx2": bool(f.get("AVX2")), "avx512f": bool(f.get("AVX512F")),
            "vnni": bool(f.get("AVX512VNNI") or f.get("AVX_VNNI"))}


def cpu_class(feat):
    return ("AVX-512 " if feat["avx512f"] else "AVX2 " if feat["avx2"] else "SSE ") + \
        ("with VNNI" if feat["vnni"] else "without VNNI")


def under_qemu(cpu, script, args, timeout):
    """Runs this Python on `script` with `args` under `qemu-x86_64 -cpu CPU`
    (the same interpreter and wheels, the kernels dispatched for the emulated
    CPU's instruction set) and returns its stdout; a failure raises one line."""
    import shutil

    qemu = shutil.which("qemu-x86_64")
    if not qemu:
        raise zoo.ZooError("qemu-x86_64 not found (Debian package qemu-user; run scripts/setup.sh)")
    try:
        r = subprocess.run([qemu, "-cpu", cpu, os.path.realpath(sys.executable), os.path.abspath(script), *args],
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise zoo.ZooError("ONNX Runtime under qemu-x86_64 -cpu %s ran past %d s" % (cpu, timeout))
    if r.returncode != 0:
        tail = [l for l in r.stderr.splitlines() if l.strip() and "TCG doesn't support" not in l][-1:]
        raise zoo.ZooError("ONNX Runtime under qemu-x86_64 -cpu %s failed: %s" % (
            cpu, " ".join(tail)[:300] or "exit %d" % r.returncode))
    return r.stdout


def ort_on_cpu(cpu, model_path, input_pb, out_npy, timeout):
    """ONNX Runtime (ORT_ENABLE_ALL, one thread) on model_path under
    `qemu-x86_64 -cpu CPU` (under_qemu). Returns (output array, the emulated
    CPU's features as that process saw them)."""
    import numpy as np

    out = under_qemu(cpu, __file__, ["--ort-child", model_path, input_pb, out_npy], timeout)
    return np.load(out_npy), json.loads(out.strip().splitlines()[-1])


def ort_child(model_path, input_pb, out_npy):
    import numpy as np
    import onnxruntime as ort

    x = load_pb(input_pb)
    import onnx

    name = onnx.load(model_path, load_external_data=False).graph.input[0].name
    np.save(out_npy, ort_run(model_path, {name: x}, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)[0])
    print(json.dumps(cpu_features()))
    return 0


def peer(key, work, seed, loom, backends, timeout, config=None, check=False, cpus=()):
    import onnx
    import onnxruntime as ort

    name, seq, slice_ = all_variants()[key]
    d = os.path.join(work, key.replace("/", "_"))
    meta = zoo.build(name, seq, slice_, seed, d)
    model_path = os.path.join(d, "model.onnx")
    input_pb = os.path.join(d, "test_data_set_0", "input_0.pb")
    model = onnx.load(model_path)
    scale, zp = output_quant(model, model.graph.output[0].name)
    x = load_pb(input_pb)
    feeds = {model.graph.input[0].name: x}
    ref_pb = load_pb(os.path.join(d, "test_data_set_0", "output_0.pb"))
    t0 = time.time()
    y_all = ort_run(model_path, feeds, ort.GraphOptimizationLevel.ORT_ENABLE_ALL)[0]
    t_all = time.time() - t0
    y_none = ort_run(model_path, feeds, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
    q_ref = to_q(y_all, scale, zp)
    # The stored reference must be what ORT computes now (same version, same machine class).
    stored = compare(to_q(ref_pb, scale, zp), q_ref)
    row = {
        "model": key,
        "macs": meta["macs"],
        "output": meta["output"],
        "out_scale": scale,
        "out_zero_point": zp,
        "ort_seconds": round(t_all, 3),
        "ort_kernels": ort_kernels(model_path, d),
        "stored_reference_identical": stored["identical"] == 1.0,
        "ort_disable_all_vs_enable_all": compare(to_q(y_none, scale, zp), q_ref),
        "loom": {},
        "cpu": cpu_class(cpu_features()),
        "ort_on_cpu": {},
    }
    for cpu in cpus:
        y, feat = ort_on_cpu(cpu, model_path, input_pb, os.path.join(d, "ort_%s.npy" % cpu), timeout)
        c = compare(to_q(y, scale, zp), q_ref)
        c["cpu_class"] = cpu_class(feat)
        row["ort_on_cpu"][cpu] = c
    for b in backends:
        out_pb, err, secs = run_loom(loom, b, model_path, [input_pb], os.path.join(d, "loom_" + b), timeout,
                                     config, check)
        if err:
            row["loom"][b] = {"error": err, "seconds": round(secs, 1)}
        else:
            c = compare(to_q(load_pb(out_pb), scale, zp), q_ref, zp)
            c["seconds"] = round(secs, 1)
            row["loom"][b] = c
    if backends:
        row["layers"] = run_compare(loom, model_path, input_pb, timeout)
    return row


def pct(x):
    # Never print 100.00 % for a fraction that is not exactly 1.
    s = "%.3f %%" % (100.0 * x)
    return "99.999 %" if x < 1.0 and s.startswith("100.") else s


def cmp_cell(c):
    return "%s / %s / %d LSB (%d differ, %d by > 1)" % (pct(c["identical"]), pct(c["within_1"]), c["max_lsb"],
                                                       c["differ"], c["beyond_1"])


def layers_cell(c):
    if "error" in c:
        return "not run: %s" % c["error"].replace("|", "\\|")
    f = c["first_drop"]
    if not f:
        return "%d, none" % c["tensors"]
    floor = pct(f["floor"]) if f["floor"] is not None else "none"
    return "%d, #%d `%s` (%s): %s against %s" % (c["tensors"], f["index"], f["node"], f["op"], pct(f["identical"]),
                                                 floor)


def table(rows, backends, cpus=()):
    head = ["model", "MACs", "output elements", "ORT integer kernels / float Conv+MatMul",
            "ORT DISABLE_ALL vs ENABLE_ALL: identical / within 1 LSB / max"]
    for cpu in cpus:
        cls = rows[0]["ort_on_cpu"][cpu]["cpu_class"] if rows else cpu
        head.append("ORT on %s (%s) vs this CPU: identical / within 1 LSB / max" % (cpu, cls))
    head += ["loom %s vs ORT: identical / within 1 LSB / max" % b for b in backends]
    if backends:
        head.append("`loom compare`: quantized tensors, first below ORT's floor")
    lines = ["| " + " | ".join(head) + " |",
             "|---|---:|---:|---|---|" + "---|" * (len(cpus) + len(backends) + (1 if backends else 0))]
    for r in rows:
        o = r["ort_disable_all_vs_enable_all"]
        cells = ["`%s`" % r["model"], "%.3g" % r["macs"], str(o["elements"]),
                 "%d / %d" % (r["ort_kernels"]["integer_kernels"], r["ort_kernels"]["float_conv_matmul"]),
                 cmp_cell(o)]
        for cpu in cpus:
            cells.append(cmp_cell(r["ort_on_cpu"][cpu]))
        for b in backends:
            l = r["loom"].get(b, {})
            if "error" in l:
                cells.append("not run: %s" % l["error"].replace("|", "\\|"))
            else:
                cells.append(cmp_cell(l))
        if backends:
            cells.append(layers_cell(r["layers"]))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_doc(path, text, section="ort-peer"):
    begin, end = "<!-- %s:begin -->" % section, "<!-- %s:end -->" % section
    with open(path) as f:
        doc = f.read()
    if begin not in doc or end not in doc:
        raise RuntimeError("%s has no %s ... %s markers" % (path, begin, end))
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(head + begin + "\n" + text + "\n" + end + tail)
    os.replace(tmp, path)


# --------------------------------------------------------------------------
# Rounding study: one integer layer, ONNX Runtime's kernel against the rules.


def loom_quantize_multiplier(real):
    """host/common/quant.h quantize_multiplier: real = mult / 2^shift, mult in [2^30, 2^31)."""
    import math

    f, e = math.frexp(real)
    m = int(round(f * (1 << 31)))  # llround: half away from zero; f > 0
    shift = 31 - e
    if m == 1 << 31:
        m >>= 1
        shift -= 1
    return m, shift


def loom_requantize(v, mult, shift):
    """host/common/quant.h requantize: exact v * mult / 2^shift, ties away from zero (int64 arrays)."""
    import numpy as np

    p = v.astype(object) * mult  # exact (Python integers)
    mag = np.abs(p)
    q = (mag + (1 << (shift - 1))) >> shift
    tie = (mag & ((1 << shift) - 1)) == (1 << (shift - 1))
    return np.where(p < 0, -q, q).astype(np.int64), tie


def loom_requantize_sum(a, ma, b, mb, shift):
    """host/common/quant.h requantize_sum: exact (a * ma + b * mb) / 2^shift, ties away from zero."""
    import numpy as np

    return loom_requantize(a.astype(object) * ma + b.astype(object) * mb, 1, shift)[0]


def loom_add_multipliers(ra, rb):
    """host/ir/op_quant.cc derive_pair: the larger real as quantize_multiplier
    gives it, the smaller rounded onto its shift (one grid)."""
    big, shift = loom_quantize_multiplier(max(ra, rb))
    small = int(math.floor(min(ra, rb) * (1 << shift) + 0.5))  # llround of a positive value
    return (big, small, shift) if ra >= rb else (small, big, shift)


def rounding_study(key, work, seed):
    """Runs the model's first Conv alone as ONNX Runtime's QLinearConv (int8
    output made a graph output) and recomputes it: the exact int32
    accumulator, ONNX Runtime's requantization as its kernel does it (float32
    scale product, ties to even), and loom's rule (31-bit multiplier, exact
    product, ties away from zero)."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from numpy.lib.stride_tricks import sliding_window_view
    from onnx import TensorProto, helper, numpy_helper

    name, seq, slice_ = all_variants()[key]
    d = os.path.join(work, key.replace("/", "_"))
    zoo.build(name, seq, slice_, seed, d)
    m = onnx.load(os.path.join(d, "model.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    prod = {o: n for n in m.graph.node for o in n.output}
    cons = {}
    for n in m.graph.node:
        for i in n.input:
            cons.setdefault(i, []).append(n)
    conv = next(n for n in m.graph.node if n.op_type == "Conv")
    dq_x, dq_w, dq_b = (prod[i] for i in conv.input[:3])
    q_out = next(c for c in cons[conv.output[0]] if c.op_type == "QuantizeLinear")
    attrs = {a.name: helper.get_attribute_value(a) for a in conv.attribute}
    sx, zx = float(inits[dq_x.input[1]]), int(inits[dq_x.input[2]])
    wq, sw = inits[dq_w.input[0]].astype(np.int64), inits[dq_w.input[1]].astype(np.float32)
    bq = inits[dq_b.input[0]].astype(np.int64)
    sy, zy = np.float32(inits[q_out.input[1]]), int(inits[q_out.input[2]])
    if np.any(inits[dq_w.input[2]] != 0):
        raise RuntimeError("study expects symmetric weights")

    # Keep the layer alone with the DequantizeLinear after it as the only
    # graph output (ONNX Runtime fuses neither a Q whose output is a graph
    # output nor one with a second consumer).
    dq_out = next(c for c in cons[q_out.output[0]] if c.op_type == "DequantizeLinear")
    keep, todo = set(), [dq_out]
    while todo:
        n = todo.pop()
        if id(n) in keep:
            continue
        keep.add(id(n))
        todo += [prod[i] for i in n.input if i in prod]
    nodes = [n for n in m.graph.node if id(n) in keep]
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    del m.graph.output[:]
    m.graph.output.append(helper.make_tensor_value_info(dq_out.output[0], TensorProto.FLOAT, None))
    x = load_pb(os.path.join(d, "test_data_set_0", "input_0.pb"))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    so.log_severity_level = 3
    so.optimized_model_filepath = os.path.join(d, "study_optimized.onnx")
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    got = to_q(s.run(None, {m.graph.input[0].name: x})[0], float(sy), zy)  # NCHW
    kernels = {n.op_type for n in onnx.load(so.optimized_model_filepath).graph.node}
    if "QLinearConv" not in kernels:
        raise RuntimeError("ONNX Runtime did not run %s as QLinearConv" % conv.name)

    # Input quantization as MlasQuantizeLinear: float32 divide, ties to even.
    qx = np.clip(np.rint(x / np.float32(sx)) + zx, -128, 127).astype(np.int64) - zx
    k, st, pads, g = attrs["kernel_shape"][0], attrs["strides"][0], attrs["pads"], attrs.get("group", 1)
    if g != 1:
        raise RuntimeError("study handles group 1 only")
    xp = np.pad(qx[0], ((0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    win = sliding_window_view(xp, (k, k), axis=(1, 2))[:, ::st, ::st]  # C, OH, OW, k, k
    acc = np.einsum("chwij,ocij->ohw", win, wq, optimize=True) + bq[:, None, None]
    if got.shape[1:] != acc.shape:
        raise RuntimeError("shape mismatch %s vs %s" % (got.shape, acc.shape))

    # ONNX Runtime's QLinearConv: output_scales[c] = x_scale * w_scale[c] / y_scale in
    # float32; MlasRequantizeOutput: float(acc) * scale, clamp, round to nearest even, + zp.
    osc = (np.float32(sx) * sw) / sy
    f = acc.astype(np.float32) * osc[:, None, None]
    ort_rule = np.clip(np.rint(np.clip(f, -128 - zy, 127 - zy)), -128 - zy, 127 - zy).astype(np.int64) + zy
    # loom's rule, with the real multiplier x_scale * w_scale[c] / y_scale in double.
    loom_rule = np.empty_like(acc)
    ties = np.zeros(acc.shape, bool)
    for c in range(acc.shape[0]):
        mult, shift = loom_quantize_multiplier(float(np.float64(sx) * np.float64(sw[c]) / np.float64(sy)))
        r, t = loom_requantize(acc[c], mult, shift)
        loom_rule[c], ties[c] = np.clip(r + zy, -128, 127), t
    diff = loom_rule != got[0]
    n = acc.size
    return {
        "model": key,
        "layer": conv.name,
        "elements": int(n),
        "ort_rule_reproduces_ort": int((ort_rule == got[0]).sum()) == n,
        "loom_rule_differs": int(diff.sum()),
        "ties": int(ties.sum()),
        "differs_at_ties": int((diff & ties).sum()),
        "differs_elsewhere": int((diff & ~ties).sum()),
        "max_lsb": int(np.abs(loom_rule - got[0]).max()),
        "acc_over_2_24": int((np.abs(acc) >= (1 << 24)).sum()),
    }


def study_table(rows):
    lines = ["| model | layer | elements | ORT kernel reproduced | loom rule differs | exact ties (.5 LSB) | "
             "differs at ties | differs elsewhere | max | abs(acc) >= 2^24 |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append("| `%s` | `%s` | %d | %s | %d | %d | %d | %d | %d LSB | %d |" % (
            r["model"], r["layer"], r["elements"], "yes, every element" if r["ort_rule_reproduces_ort"] else "NO",
            r["loom_rule_differs"], r["ties"], r["differs_at_ties"], r["differs_elsewhere"], r["max_lsb"],
            r["acc_over_2_24"]))
    return "\n".join(lines)


def add_study(key, work, seed, loom, config=None):
    """The model's last quantized Add (its output is the graph output): ONNX
    Runtime runs it as DequantizeLinear, float Add, QuantizeLinear (one
    rounding, ties to even); loom puts both operands on one fixed-point grid
    and rounds the exact sum once, ties away from zero. Replays both rules on the
    Add's int8 operands as ONNX Runtime computed them and compares with ONNX
    Runtime's and loom's actual outputs."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    name, seq, slice_ = all_variants()[key]
    d = os.path.join(work, key.replace("/", "_"))
    zoo.build(name, seq, slice_, seed, d)
    m = onnx.load(os.path.join(d, "model.onnx"))
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    prod = {o: n for n in m.graph.node for o in n.output}
    out_dq = prod[m.graph.output[0].name]
    q = prod[out_dq.input[0]]
    add = prod[q.input[0]]
    if add.op_type != "Add":
        raise RuntimeError("%s: the graph output is not a quantized Add" % key)
    dqa, dqb = prod[add.input[0]], prod[add.input[1]]

    def qp(n):
        return np.float32(inits[n.input[1]]), int(inits[n.input[2]])

    (sa, za), (sb, zb), (sy, zy) = qp(dqa), qp(dqb), qp(q)
    # The operands' DequantizeLinear outputs as extra graph outputs (they are
    # outside every fused group, so ONNX Runtime's kernels stay the same).
    for n in (dqa, dqb):
        m.graph.output.append(helper.make_tensor_value_info(n.output[0], TensorProto.FLOAT, None))
    x = load_pb(os.path.join(d, "test_data_set_0", "input_0.pb"))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    y, fa, fb = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(
        None, {m.graph.input[0].name: x})
    qa, qb, qy = to_q(fa, float(sa), za), to_q(fb, float(sb), zb), to_q(y, float(sy), zy)
    ref = to_q(load_pb(os.path.join(d, "test_data_set_0", "output_0.pb")), float(sy), zy)
    # ONNX Runtime: float32 (DQ(a) + DQ(b)) / y_scale, ties to even (MlasQuantizeLinear).
    fsum = (np.float32(sa) * (qa - za).astype(np.float32)) + (np.float32(sb) * (qb - zb).astype(np.float32))
    ort_rule = np.clip(np.rint(fsum.astype(np.float32) / sy) + zy, -128, 127).astype(np.int64)
    # loom (host/ir/reference.cc eltwise): rqs(a - za, ma, b - zb, mb, shift) + zy, one rounding.
    ma, mb, shift = loom_add_multipliers(float(sa) / float(sy), float(sb) / float(sy))
    loom_rule = np.clip(loom_requantize_sum(qa - za, ma, qb - zb, mb, shift) + zy, -128, 127)
    row = {"model": key, "layer": add.name, "elements": int(qy.size),
           "ort_outputs_unchanged": bool(np.array_equal(qy, ref)),
           "ort_rule_reproduces_ort": int((ort_rule == qy).sum()) == qy.size,
           "loom_rule_vs_ort": compare(loom_rule, qy)}
    out_pb, err, _ = run_loom(loom, "ref", os.path.join(d, "model.onnx"),
                              [os.path.join(d, "test_data_set_0", "input_0.pb")], os.path.join(d, "loom_add_study"),
                              1800, config)
    if err:
        row["loom_error"] = err
    else:
        ql = to_q(load_pb(out_pb), float(sy), zy)
        row["loom_rule_vs_loom"] = compare(loom_rule, ql)
        row["loom_vs_ort"] = compare(ql, qy)
    return row


def add_table(rows):
    lines = ["| model | Add | elements | ONNX Runtime rule reproduces ONNX Runtime | "
             "loom rule vs loom ref's output: identical | loom rule vs ONNX Runtime: identical / within 1 LSB | "
             "loom ref vs ONNX Runtime: identical |", "|---|---|---:|---|---|---|---|"]
    for r in rows:
        c = r["loom_rule_vs_ort"]
        if "loom_error" in r:
            lr = lo = "not run: " + r["loom_error"]
        else:
            lr = "%s (%d differ)" % (pct(r["loom_rule_vs_loom"]["identical"]), r["loom_rule_vs_loom"]["differ"])
            lo = "%s (%d differ)" % (pct(r["loom_vs_ort"]["identical"]), r["loom_vs_ort"]["differ"])
        lines.append("| `%s` | `%s` | %d | %s | %s | %s / %s (%d differ) | %s |" % (
            r["model"], r["layer"], r["elements"], "yes, every element" if r["ort_rule_reproduces_ort"] else "NO",
            lr, pct(c["identical"]), pct(c["within_1"]), c["differ"], lo))
    return "\n".join(lines)


def default_loom():
    root = os.path.dirname(HERE)
    for d in ("ci", "zoo"):
        p = os.path.join(root, "build", d, "bin", "loom")
        if os.access(p, os.X_OK):
            return p
    return os.path.join(root, "build", "ci", "bin", "loom")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--models", default="fast", help="fast, all, or comma-separated variant keys")
    ap.add_argument("--list", action="store_true", help="print the variant keys and exit")
    ap.add_argument("--loom", default=default_loom(), help="loom binary (default: build/ci/bin/loom)")
    ap.add_argument("--backends", default="ref,tlm")
    ap.add_argument("--work", default=os.path.join(os.path.dirname(HERE), "build", "zoo", "peer"))
    ap.add_argument("--seed", type=int, default=zoo.DEFAULT_SEED)
    ap.add_argument("--timeout", type=int, default=1800, help="seconds per loom run")
    ap.add_argument("--config", help="hardware configuration for loom run (default: loom's default)")
    ap.add_argument("--check", action="store_true", help="also pass --check to loom run (bit-exact vs its reference)")
    ap.add_argument("--doc", help="Markdown file whose ort-peer table to replace")
    ap.add_argument("--json", help="also write the rows as JSON here")
    ap.add_argument("--rounding-study", action="store_true",
                    help="recompute the first Conv of ResNet-50 and MobileNetV2 under both rounding rules")
    ap.add_argument("--cpu", default="",
                    help="comma-separated qemu CPU models (e.g. Haswell: AVX2 without VNNI); ONNX Runtime also "
                         "runs under qemu-x86_64 -cpu MODEL and is compared with its run on this CPU")
    ap.add_argument("--ort-child", nargs=3, metavar=("MODEL", "INPUT", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.ort_child:
        return ort_child(*a.ort_child)
    cpus = [c for c in a.cpu.split(",") if c]
    variants = all_variants()
    if a.list:
        print("\n".join(variants))
        return 0
    keys = FAST if a.models == "fast" else ALL if a.models == "all" else a.models.split(",")
    for k in keys:
        if k not in variants:
            print("loom: error: ort_peer: unknown model '%s' (see --list)" % k, file=sys.stderr)
            return 1
    backends = [b for b in a.backends.split(",") if b]
    if backends and not os.access(a.loom, os.X_OK):
        print("loom: error: ort_peer: --loom %s is not an executable (build the loom target)" % a.loom,
              file=sys.stderr)
        return 1
    os.makedirs(a.work, exist_ok=True)
    if a.rounding_study:
        text = study_table([rounding_study(k, a.work, a.seed) for k in ("resnet50/stem", "mobilenetv2/stem")])
        if backends:
            text += "\n\n" + add_table([add_study("mobilenetv2/block", a.work, a.seed, a.loom, a.config)])
        text += "\n\nMeasured with `scripts/ort_peer.py --rounding-study%s`." % (
            " --backends \"\"" if not backends else "")
        print(text)
        if a.doc:
            write_doc(a.doc, text, "rounding-study")
        return 0
    rows = []
    try:
        for k in keys:
            print("ort_peer: %s ..." % k, file=sys.stderr, flush=True)
            rows.append(peer(k, a.work, a.seed, a.loom, backends, a.timeout, a.config, a.check, cpus))
    except zoo.ZooError as e:
        print("loom: error: ort_peer: %s" % e, file=sys.stderr)
        return 1
    import onnxruntime

    cmdline = "scripts/ort_peer.py --models %s --backends %s" % (a.models, ",".join(backends) or '""')
    if a.config:
        cmdline += " --config " + a.config
    if a.check:
        cmdline += " --check"
    if cpus:
        cmdline += " --cpu " + ",".join(cpus)
    text = table(rows, backends, cpus) + "\n\nMeasured with onnxruntime %s on an x86-64 CPU of class %s (`%s`)." % (
        onnxruntime.__version__, cpu_class(cpu_features()), cmdline)
    print(text)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=2)
    if a.doc:
        write_doc(a.doc, text)
    split = ["%s on %s" % (r["model"], c) for r in rows for c, v in r["ort_on_cpu"].items() if v["identical"] != 1.0]
    if split:
        print("loom: error: ort_peer: ONNX Runtime's output depends on the CPU for %s" % ", ".join(split),
              file=sys.stderr)
        return 1
    bad = [r["model"] for r in rows if not r["stored_reference_identical"]]
    if bad:
        print("loom: error: ort_peer: stored output_0.pb differs from ORT's output now for %s" % ", ".join(bad),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
