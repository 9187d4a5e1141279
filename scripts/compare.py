#!/usr/bin/env python3
"""`loom compare`: where loom and ONNX Runtime part on a quantized ONNX model,
layer by layer (host/cli/cmd_compare.cc runs this script; docs/onnx.md).

Every quantized tensor (the output of each QuantizeLinear, and of each
QLinear* op) is marked as a graph output, as Polygraphy's
`--onnx-outputs mark all` does, and computed three ways on the same inputs:

  * ONNX Runtime at ORT_DISABLE_ALL (CPU, one thread): the graph as written,
    DequantizeLinear -> float op -> QuantizeLinear. This is the reference.
  * loom: `loom run MARKED --backend ref --inputs ...` (what loom computes,
    bit-exact with every loom backend).
  * ONNX Runtime at ORT_ENABLE_ALL, its fused integer kernels: "ORT's floor",
    how far ONNX Runtime disagrees with itself on the same tensor. Marking a
    tensor as a graph output stops ONNX Runtime from fusing the QDQ group
    that produces it, so the marks go into the graph ORT_ENABLE_ALL has
    already optimized (written by ONNX Runtime, then run as it stands): a
    tensor that graph no longer holds has no floor.
  * with --floor-cpu CPU, ONNX Runtime at ORT_DISABLE_ALL once more under
    `qemu-x86_64 -cpu CPU`: the same wheel with its kernels dispatched for
    that CPU (its float convolutions and matrix products accumulate in
    another order), a second floor. Where both ORT levels run the same float
    kernels, ORT_ENABLE_ALL's floor is 100 % and only another CPU shows how
    far ONNX Runtime disagrees with itself.

Codes are compared in integer LSBs, exactly; the cosine is over the codes
less the zero point.

Usage (the loom binary writes the inputs, seeded or read, as .pb files):
  compare.py MODEL --loom BIN --work DIR --inputs F... [--seed N | --given F...]
             [--layers] [--json-out FILE] [--min-cosine X] [--floor-cpu CPU]
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from loomtool import script_main  # noqa: E402
import compare_local  # noqa: E402
import ort_peer  # noqa: E402
import zoo  # noqa: E402

# The threshold a layer's agreement drops below: its cosine under
# --min-cosine (this when not given), or its share of identical codes more
# than IDENTICAL_MARGIN under ORT's floor on the same tensor.
DEFAULT_COSINE = 0.999
IDENTICAL_MARGIN = 0.01

# Quantized ops and where their output's (scale, zero point) are among the
# inputs. QuantizeLinear and the QLinear* ops of ONNX and of ONNX Runtime's
# com.microsoft domain (QGemm is one too).
QUANT_OUTPUT = {
    "QuantizeLinear": (1, 2),
    "QLinearConv": (6, 7), "QLinearMatMul": (6, 7), "QLinearAdd": (6, 7), "QLinearMul": (6, 7),
    "QLinearAveragePool": (3, 4), "QLinearGlobalAveragePool": (3, 4), "QLinearLeakyRelu": (3, 4),
    "QLinearSigmoid": (3, 4), "QLinearSoftmax": (3, 4), "QLinearReduceMean": (3, 4),
    "QLinearConcat": (0, 1), "QGemm": (7, 8),
}
# Ops that move integer codes without changing them: a tensor they produce
# has their input's scale and zero point.
CODE_MOVES = {"Transpose", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "MaxPool", "Identity", "Slice",
              "Gather", "Split", "Concat", "DepthToSpace", "SpaceToDepth", "Resize"}
# Ops whose output has the layout of their first input.
KEEP_LAYOUT = {"QuantizeLinear", "DequantizeLinear", "Add", "Sub", "Mul", "Div", "Relu", "Clip", "Sigmoid",
               "HardSigmoid", "HardSwish", "LeakyRelu", "Identity", "QLinearAdd", "QLinearMul", "QLinearLeakyRelu",
               "QLinearSigmoid"}


class Layer:
    """One quantized tensor: its name, the node that makes it (and the op
    before a QuantizeLinear), its (scale, zero point) and dtype."""

    def __init__(self, tensor, qnode, node, op, scale, zero_point, dtype):
        self.tensor, self.qnode, self.node, self.op = tensor, qnode, node, op
        self.scale, self.zero_point, self.dtype = scale, zero_point, dtype
        self.dq_consumers = []  # names of the DequantizeLinear nodes reading it
        self.made_by = ""  # the file's name of the op before a QuantizeLinear (else of qnode)
        self.final = False  # a graph output, or read by one through a DequantizeLinear


def constants(model):
    """Every initializer and Constant node output of `model` as numpy arrays."""
    from onnx import helper, numpy_helper

    c = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            c[n.output[0]] = numpy_helper.to_array(helper.get_attribute_value(n.attribute[0]))
    return c


def quant_params(node, consts):
    """(scale, zero point, dtype name) of a quantized op's output; None where
    not a constant. A QuantizeLinear without a zero point makes uint8 (or its
    output_dtype)."""
    import numpy as np
    from onnx import helper

    si, zi = QUANT_OUTPUT[node.op_type]
    get = (lambda i: consts.get(node.input[i]) if i < len(node.input) and node.input[i] else None)
    scale, zp = get(si), get(zi)
    if zp is not None:
        return scale, zp, str(zp.dtype)
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    dtype = helper.tensor_dtype_to_np_dtype(attrs.get("output_dtype", 0) or 2)
    return scale, np.zeros((), dtype), str(np.dtype(dtype))


def topological(model, nodes):
    """The places of `nodes` (the graph's) in a topological order, the
    file's order where it is one (as the ONNX checker wants; loom sorts a
    file that is not)."""
    have = {i.name for i in model.graph.input} | {t.name for t in model.graph.initializer} | {""}
    todo, order = list(range(len(nodes))), []
    while todo:
        ready = [k for k in todo if all(i in have for i in nodes[k].input)]
        if not ready:
            raise RuntimeError("the graph has a cycle or a tensor nothing makes (at node '%s')" % nodes[todo[0]].name)
        todo = [k for k in todo if k not in set(ready)]
        for k in ready:
            have.update(nodes[k].output)
        order += ready
    return order


def quantized_layers(model):
    """The model's quantized tensors in topological order. An unnamed node
    is named as loom names it: OP_K, K its place in the file."""
    consts, nodes = constants(model), list(model.graph.node)
    names = [n.name or "%s_%d" % (n.op_type, k) for k, n in enumerate(nodes)]
    producer = {o: k for k, n in enumerate(nodes) for o in n.output}
    layers, seen = [], set()
    for k in topological(model, nodes):
        n = nodes[k]
        if n.op_type not in QUANT_OUTPUT or not n.output or n.output[0] in seen:
            continue
        scale, zp, dtype = quant_params(n, consts)
        p = producer.get(n.input[0]) if n.op_type == "QuantizeLinear" else k
        node, op = (names[p], nodes[p].op_type) if p is not None else (n.input[0], "graph input")
        layers.append(Layer(n.output[0], n, node, op, scale, zp, dtype))
        layers[-1].made_by = nodes[p if p is not None else k].name
        seen.add(n.output[0])
    by_tensor = {l.tensor: l for l in layers}
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.input[0] in by_tensor and n.name:
            by_tensor[n.input[0]].dq_consumers.append(n.name)
    for o in model.graph.output:
        p = nodes[producer[o.name]] if o.name in producer else None
        src = p.input[0] if p is not None and p.op_type == "DequantizeLinear" else o.name
        if src in by_tensor:
            by_tensor[src].final = True
    return layers


def marked(model, names, types):
    """A copy of `model` with every tensor in `names` also a graph output;
    types[name] = (onnx element type, shape or None)."""
    import onnx
    from onnx import helper

    m = onnx.ModelProto()
    m.CopyFrom(model)
    have = {o.name for o in m.graph.output}
    for name in names:
        if name not in have:
            elem, shape = types[name]
            m.graph.output.append(helper.make_tensor_value_info(name, elem, shape))
            have.add(name)
    return m


def elem_type(dtype):
    import numpy as np
    from onnx import helper

    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


first_line = ort_peer.first_line


def ort_outputs(model, feeds, level, optimized=None):
    """{graph output: array} of ONNX Runtime on `model` at `level` (a name
    of onnxruntime.GraphOptimizationLevel); `optimized`: where ONNX Runtime
    writes the graph it optimized."""
    import onnxruntime as ort

    try:
        got = ort_peer.ort_run(model.SerializeToString(), feeds, getattr(ort.GraphOptimizationLevel, level), optimized)
    except Exception as e:  # ONNX Runtime raises its own exception types
        raise RuntimeError("ONNX Runtime at %s cannot run the model: %s" % (level, first_line(e)))
    return dict(zip([o.name for o in model.graph.output], got))


def read_feeds(model, files):
    """The input files (the .pb files loom wrote), bound to the graph inputs in order."""
    names = graph_inputs(model)
    if len(files) != len(names):
        raise RuntimeError("%d input files for %d graph inputs" % (len(files), len(names)))
    return {n: ort_peer.load_pb(f) for n, f in zip(names, files)}


def graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [i.name for i in model.graph.input if i.name not in inits]


def loom_outputs(loom, model, inputs, work, source):
    """{graph output: array} of `loom run MODEL --backend ref` on `inputs`
    (the model written to WORK/marked.onnx; its errors name `source`)."""
    import onnx

    path = os.path.join(work, "marked.onnx")
    onnx.save(model, path)
    out = os.path.join(work, "loom")
    _, err, _ = ort_peer.run_loom(loom, "ref", path, inputs, out, None)
    if err:
        raise RuntimeError("loom run --backend ref: %s" % err.replace("loom: error: ", "").replace(path, source))
    return {o.name: ort_peer.load_pb(os.path.join(out, "output_%d.pb" % k)) for k, o in enumerate(model.graph.output)}


def fused_node(nodes, name):
    """The node ONNX Runtime made of node `name` when it fused it: the same
    name, or the name with a "_token_N" suffix."""
    for n in nodes:
        if n.name == name or n.name.startswith(name + "_token_"):
            return n
    return None


def channels_last(tensor, graph, depth=0):
    """Whether an NCHW tensor of the model is channels-last (NHWC) in ONNX
    Runtime's optimized graph: made by a channels_last kernel or a Transpose
    to NHWC, through ops that keep the layout of their first input."""
    p = graph["producer"].get(tensor)
    if p is None or depth > 64:
        return False
    if any(a.name == "channels_last" for a in p.attribute):
        return any(a.name == "channels_last" and a.i == 1 for a in p.attribute)
    if p.op_type == "Transpose":
        perm = [list(a.ints) for a in p.attribute if a.name == "perm"]
        return perm == [[0, 2, 3, 1]]
    return p.op_type in KEEP_LAYOUT and bool(p.input) and channels_last(p.input[0], graph, depth + 1)


def fused_tensor(opt, layer):
    """The tensor of ONNX Runtime's optimized graph `opt` that holds
    `layer`'s codes; None when the fusion left no such tensor. Found by the
    names ONNX Runtime keeps: the quantizing node itself, a DequantizeLinear
    that read the tensor, or the fused node made of the op before the
    QuantizeLinear."""
    by_name = {n.name: n for n in opt.graph.node if n.name}  # an unnamed node cannot be told apart
    n = by_name.get(layer.qnode.name)
    if n is not None and n.op_type == layer.qnode.op_type:
        return n.output[0]
    for c in layer.dq_consumers:
        for name in (c, c + "/duplicated"):
            d = by_name.get(name)
            if d is not None and d.op_type == "DequantizeLinear":
                return d.input[0]
    n = fused_node(opt.graph.node, layer.made_by) if layer.made_by else None
    if n is not None and (n.op_type in QUANT_OUTPUT or n.op_type in CODE_MOVES):
        return n.output[0]
    return None


def fused_params(tensor, graph, consts, depth=0):
    """(scale, zero point) of an integer tensor of ONNX Runtime's optimized
    graph: from a DequantizeLinear that reads it, else from the op that makes
    it (through ops that only move codes); None when unknown."""
    import numpy as np

    for n in graph["consumers"].get(tensor, []):
        if n.op_type == "DequantizeLinear":
            zp = consts.get(n.input[2]) if len(n.input) > 2 and n.input[2] else np.zeros((), np.uint8)
            return consts.get(n.input[1]), zp
    p = graph["producer"].get(tensor)
    if p is None or depth > 16:
        return None
    if p.op_type in QUANT_OUTPUT:
        return quant_params(p, consts)[:2]
    if p.op_type in CODE_MOVES and p.input:
        return fused_params(p.input[0], graph, consts, depth + 1)
    return None


def graph_index(model):
    g = {"producer": {o: n for n in model.graph.node for o in n.output}, "consumers": {}}
    for n in model.graph.node:
        for i in n.input:
            g["consumers"].setdefault(i, []).append(n)
    return g


def fused_sources(opt, layers):
    """{layer tensor: ((tensor of `opt`, channels last), (scale, zero point))}
    for every layer ONNX Runtime's optimized graph still holds."""
    consts, graph = constants(opt), graph_index(opt)
    where = {}
    for l in layers:
        name = fused_tensor(opt, l)
        params = fused_params(name, graph, consts) if name else None
        if params is not None and params[0] is not None and params[1] is not None:
            where[l.tensor] = ((name, channels_last(name, graph)), params)
    return where


def ort_floor(model, layers, feeds, ref, work):
    """ORT_ENABLE_ALL's codes of every layer its optimized graph still holds,
    in the model's own encoding (ONNX Runtime turns int8 activations into
    uint8 and moves the zero point by 128), and a note when there are none."""
    import numpy as np
    import onnx

    path = os.path.join(work, "ort_enable_all.onnx")
    finals = ort_outputs(model, feeds, "ORT_ENABLE_ALL", optimized=path)
    opt = onnx.load(path)
    where = fused_sources(opt, layers)
    types = {s[0]: (elem_type(p[1].dtype), None) for s, p in where.values()}
    got = ort_outputs(marked(opt, list(types), types), feeds, "ORT_DISABLE_ALL")
    # The optimized graph, run as it stands, must compute what ORT_ENABLE_ALL did.
    if any(not np.array_equal(got[n], y) for n, y in finals.items()):
        return {}, "ONNX Runtime's optimized graph, run as written, does not reproduce ORT_ENABLE_ALL's outputs"
    floor = {}
    for l in layers:
        if l.tensor not in where:
            continue
        (name, last), (scale, zp) = where[l.tensor]
        a, r = got[name], ref[l.tensor]
        # Channels-last where ONNX Runtime's NHWC kernels left it so; the
        # layout is only a guess where both orders give the same shape.
        if a.ndim == 4 and (a.shape != r.shape or last) and np.moveaxis(a, -1, 1).shape == r.shape:
            a = np.moveaxis(a, -1, 1)
        same_scale = l.scale is None or np.array_equal(np.float32(scale), np.float32(l.scale))
        if a.shape == r.shape and a.dtype.kind in "iu" and same_scale:
            floor[l.tensor] = a.astype(np.int64) - zp.astype(np.int64) + np.asarray(l.zero_point).astype(np.int64)
    return floor, None


def layer_rows(layers, ref, got, floor, cpu_ref=None, local=None):
    """One row per layer: loom against ORT_DISABLE_ALL, ORT's floor
    (ORT_ENABLE_ALL against ORT_DISABLE_ALL) where it has one, with
    `cpu_ref` ONNX Runtime on the other CPU against the reference, and with
    `local` (--local) the layer alone on ONNX Runtime's codes of what it reads."""
    import numpy as np

    rows = []
    for i, l in enumerate(layers):
        r, g = ref[l.tensor], got[l.tensor]
        if g.shape != r.shape:
            raise RuntimeError("loom's %s has shape %s, ONNX Runtime's %s" % (l.tensor, list(g.shape), list(r.shape)))
        zp = np.asarray(l.zero_point).astype(np.int64)
        f = floor.get(l.tensor)
        rows.append({"index": i, "tensor": l.tensor, "node": l.node, "op": l.op, "dtype": l.dtype,
                     "shape": list(r.shape), "elements": int(r.size), "final": l.final,
                     "loom": ort_peer.compare(g, r, zp),
                     "ort_floor": ort_peer.compare(f, r, zp) if f is not None else None,
                     "ort_cpu_floor": ort_peer.compare(cpu_ref[l.tensor], r, zp) if cpu_ref else None,
                     "local": local[l.tensor] if local else None})
    return rows


def drop_reason(row, cosine):
    """Why `row` is below the threshold, or None. The floor is the lower of
    ORT's floors on the tensor; without one, its share of identical codes is
    held against 100 %."""
    l = row["loom"]
    if l["cosine"] < cosine:
        return "cosine %s < %s" % (cos_str(l["cosine"]), cosine)
    floors = [(f["identical"], name) for f, name in ((row["ort_floor"], "ORT's floor"),
                                                     (row["ort_cpu_floor"], "ORT's floor on the other CPU"))
              if f is not None]
    floor, name = min(floors) if floors else (1.0, None)
    if l["identical"] < floor - IDENTICAL_MARGIN:
        return "%s identical, more than %s under %s" % (
            ort_peer.pct(l["identical"]), points(IDENTICAL_MARGIN),
            "%s (%s)" % (name, ort_peer.pct(floor)) if name else "100 % (no floor on this tensor)")
    return None


def points(fraction):
    return "%g percentage point%s" % (100 * fraction, "" if fraction == 0.01 else "s")


def cos_str(c):
    # Never print 1.000000 for a cosine that is not exactly 1.
    s = "%.6f" % c
    return "0.999999" if c < 1.0 and s.startswith("1.") else s


def layer_name(row):
    return "#%d %s (%s, %s)" % (row["index"], row["tensor"], row["node"], row["op"])


def local_cells(x):
    if "error" in x:
        return ["error", "-"]
    return [ort_peer.pct(x["identical"]), str(x["max_lsb"])]


def table(rows):
    cpu = any(r["ort_cpu_floor"] for r in rows)
    local = any(r["local"] for r in rows)
    head = ["#", "tensor", "node (op)", "elements", "identical", "within 1", "max LSB", "cosine",
            "ORT floor: identical", "cosine"] + (["other CPU: identical", "cosine"] if cpu else []) + \
        (["alone: identical", "max LSB"] if local else [])
    lines = [head]
    for r in rows:
        l, f, c = r["loom"], r["ort_floor"], r["ort_cpu_floor"]
        lines.append([str(r["index"]), r["tensor"] + (" (output)" if r["final"] else ""),
                      "%s (%s)" % (r["node"], r["op"]), str(r["elements"]), ort_peer.pct(l["identical"]),
                      ort_peer.pct(l["within_1"]), str(l["max_lsb"]), cos_str(l["cosine"]),
                      ort_peer.pct(f["identical"]) if f else "-", cos_str(f["cosine"]) if f else "-"] +
                     ([ort_peer.pct(c["identical"]), cos_str(c["cosine"])] if cpu else []) +
                     (local_cells(r["local"]) if local else []))
    widths = [max(len(x[k]) for x in lines) for k in range(len(head))]
    left = {1, 2}
    return "\n".join("  ".join(c.ljust(w) if k in left else c.rjust(w) for k, (c, w) in enumerate(zip(x, widths)))
                     .rstrip() for x in lines)


def agreement(row):
    l, f, c = row["loom"], row["ort_floor"], row["ort_cpu_floor"]
    s = "loom %s identical, %s within 1 LSB, max %d LSB, cosine %s" % (
        ort_peer.pct(l["identical"]), ort_peer.pct(l["within_1"]), l["max_lsb"], cos_str(l["cosine"]))
    if f is None:
        s += "; ORT's floor: none (ORT_ENABLE_ALL's graph holds no such tensor)"
    else:
        s += "; ORT's floor %s identical, cosine %s" % (ort_peer.pct(f["identical"]), cos_str(f["cosine"]))
    if c is not None:
        s += "; on the other CPU %s identical, cosine %s" % (ort_peer.pct(c["identical"]), cos_str(c["cosine"]))
    return s


def summary(doc):
    rows = doc["layers"]
    inputs = doc["inputs"]
    lines = ["loom compare %s: %d quantized tensors, inputs %s" % (
        doc["model"], len(rows), "seeded (--seed %d)" % inputs["seed"] if "seed" in inputs else
        " ".join(inputs["files"])),
        "loom ref against ONNX Runtime %s at ORT_DISABLE_ALL (CPU, 1 thread); ORT's floor: its ORT_ENABLE_ALL "
        "against its ORT_DISABLE_ALL" % doc["onnxruntime_version"] +
        ("; the other CPU: ORT_DISABLE_ALL under qemu-x86_64 -cpu %s (%s)" % (
            doc["floor_cpu"]["cpu"], doc["floor_cpu"]["cpu_class"]) if doc.get("floor_cpu") else "")]
    finals = [r for r in rows if r["final"]] or rows[-1:]
    for r in finals:
        lines.append("%s %s, %d elements: %s" % ("output" if r["final"] else "last quantized tensor", layer_name(r),
                                                  r["elements"], agreement(r)))
    t = doc["threshold"]
    rule = "cosine < %s, or identical more than %s under ORT's lower floor, 100 %% where it has none" % (
        t["cosine"], points(t["identical_margin"]))
    d = doc["first_drop"]
    alone = rows[d["index"]]["local"] if d is not None else None
    lines.append("first layer below the threshold (%s): %s%s" % (
        rule, "none" if d is None else "%s: %s" % (layer_name(rows[d["index"]]), d["reason"]),
        "; alone %s identical, max %d LSB" % (ort_peer.pct(alone["identical"]), alone["max_lsb"])
        if alone and "error" not in alone else ""))
    if doc["local"]:
        lines += local_summary(rows)
    lines += ["note: " + n for n in doc["notes"]]
    return "\n".join(lines)


def local_summary(rows):
    """--local: how many layers alone on ONNX Runtime's codes agree, per op
    type, the largest difference and the layers that could not run alone."""
    ran = [r for r in rows if "error" not in r["local"]]
    failed = [r for r in rows if "error" in r["local"]]
    same = sum(r["local"]["differ"] == 0 for r in ran)
    within = sum(r["local"]["differ"] > 0 and r["local"]["beyond_1"] == 0 for r in ran)
    by_op = {}
    for r in ran:
        n = by_op.setdefault(r["op"], [0, 0, 0])
        n[0] += 1
        n[1] += r["local"]["differ"] > 0
        n[2] = max(n[2], r["local"]["max_lsb"])
    lines = ["each layer alone on ONNX Runtime's codes of what it reads (--local): %d of %d identical on every "
             "element, %d more within 1 LSB, %d beyond" % (same, len(ran), within, len(ran) - same - within),
             "  by op (layers, with any difference, max LSB): " + ", ".join(
                 "%s %d/%d/%d" % (op, n[0], n[1], n[2]) for op, n in sorted(by_op.items()))]
    worst = max(ran, key=lambda r: (r["local"]["max_lsb"], r["local"]["differ"]), default=None)
    if worst is not None and worst["local"]["differ"]:
        lines.append("  largest: %s: %s identical, max %d LSB" % (
            layer_name(worst), ort_peer.pct(worst["local"]["identical"]), worst["local"]["max_lsb"]))
    for r in failed[:3]:
        lines.append("  not run alone: %s: %s" % (layer_name(r), r["local"]["error"]))
    if len(failed) > 3:
        lines.append("  and %d more not run alone" % (len(failed) - 3))
    return lines


def ort_on_cpu(cpu, model, feeds, work):
    """ONNX Runtime at ORT_DISABLE_ALL on `model` under `qemu-x86_64 -cpu
    CPU` (ort_peer.under_qemu, this script as the child, see ort_child):
    {graph output: array} and the emulated CPU's class as that process saw it."""
    import numpy as np

    path, inputs, out = (os.path.join(work, n) for n in ("cpu_floor.onnx", "cpu_floor_in.npz", "cpu_floor_out.npz"))
    with open(path, "wb") as f:
        f.write(model.SerializeToString())
    np.savez(inputs, **feeds)
    try:
        stdout = ort_peer.under_qemu(cpu, __file__, ["--ort-child", path, inputs, out], 3600)
    except zoo.ZooError as e:
        raise RuntimeError(str(e))
    with np.load(out) as z:
        got = {o.name: z["o%d" % k] for k, o in enumerate(model.graph.output)}
    return got, ort_peer.cpu_class(json.loads(stdout.strip().splitlines()[-1]))


def ort_child(path, inputs, out):
    """The child of ort_on_cpu: the model's outputs at ORT_DISABLE_ALL into
    `out` (o0, o1, ... in graph output order), this CPU's features on stdout."""
    import numpy as np

    model = load_model(path)
    with np.load(inputs) as z:
        feeds = {k: z[k] for k in z.files}
    got = ort_outputs(model, feeds, "ORT_DISABLE_ALL")
    np.savez(out, **{"o%d" % k: got[o.name] for k, o in enumerate(model.graph.output)})
    print(json.dumps(ort_peer.cpu_features()))
    return 0


def load_model(path):
    import onnx

    try:
        return onnx.load(path)
    except Exception as e:  # protobuf's DecodeError, OSError
        raise RuntimeError("%s: not a readable ONNX model (%s)" % (path, first_line(e)))


def compare(a):
    """The comparison document of `a` (the parsed command line)."""
    import onnxruntime

    model = load_model(a.model)
    layers = quantized_layers(model)
    if not layers:
        raise RuntimeError("%s has no quantized tensor (no QuantizeLinear or QLinear* node): nothing to compare "
                           "(loom compare takes quantized QDQ models)" % a.model)
    feeds = read_feeds(model, a.inputs)
    names = [l.tensor for l in layers]
    ref = ort_outputs(marked(model, names, {l.tensor: (elem_type(l.dtype), None) for l in layers}), feeds,
                      "ORT_DISABLE_ALL")
    # The file loom reads gives every output its shape (ONNX's checker wants one).
    shaped = {n: (elem_type(ref[n].dtype), list(ref[n].shape)) for n in names}
    got = loom_outputs(a.loom, marked(model, names, shaped), a.inputs, a.work, a.model)
    floor, note = ort_floor(model, layers, feeds, ref, a.work)
    cpu_ref, cpu_class = ort_on_cpu(a.floor_cpu, marked(model, names, shaped), feeds, a.work) if a.floor_cpu \
        else (None, None)
    local = compare_local.local_rows(a.loom, model, topological(model, list(model.graph.node)), layers,
                                     dict(feeds, **ref), a.work) if a.local else None
    rows = layer_rows(layers, ref, got, floor, cpu_ref, local)
    cosine = DEFAULT_COSINE if a.min_cosine is None else a.min_cosine
    drop = next(((r, why) for r in rows for why in [drop_reason(r, cosine)] if why), None)
    notes = [note] if note else []
    missing = sum(r["ort_floor"] is None for r in rows)
    if missing and not note:
        notes.append("%d of %d tensors %s no floor: ORT_ENABLE_ALL's optimized graph holds no such tensor "
                     "(fused into a kernel or removed)" % (missing, len(rows), "has" if missing == 1 else "have"))
    return {
        "model": a.model, "against": "onnxruntime", "onnxruntime_version": onnxruntime.__version__,
        "loom_backend": "ref", "reference": "ORT_DISABLE_ALL", "floor": "ORT_ENABLE_ALL",
        "floor_cpu": {"cpu": a.floor_cpu, "cpu_class": cpu_class} if a.floor_cpu else None,
        "local": a.local,
        "inputs": {"seed": a.seed} if a.seed is not None else {"files": a.given},
        "threshold": {"cosine": cosine, "identical_margin": IDENTICAL_MARGIN}, "min_cosine": a.min_cosine,
        "layers": rows,
        "first_drop": None if drop is None else {"index": drop[0]["index"], "tensor": drop[0]["tensor"],
                                                 "reason": drop[1]},
        "below_min_cosine": [r["index"] for r in rows
                             if a.min_cosine is not None and r["loom"]["cosine"] < a.min_cosine],
        "notes": notes,
    }


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--ort-child":
        return ort_child(*sys.argv[2:])
    ap = argparse.ArgumentParser(prog="compare.py", description=__doc__.split("\n")[0])
    ap.add_argument("model")
    ap.add_argument("--loom", required=True, help="the loom binary")
    ap.add_argument("--work", required=True, help="a scratch folder (the caller removes it)")
    ap.add_argument("--inputs", nargs="+", required=True, help="one .pb file per graph input, in order")
    ap.add_argument("--seed", type=int, help="the seed the inputs were made with")
    ap.add_argument("--given", nargs="+", default=[], help="the input files the user gave")
    ap.add_argument("--layers", action="store_true")
    ap.add_argument("--json-out", help="write the result here instead of printing text")
    ap.add_argument("--min-cosine", type=float)
    ap.add_argument("--local", action="store_true", help="also each layer alone, on ONNX Runtime's codes of its inputs")
    ap.add_argument("--floor-cpu", help="a qemu CPU model: ONNX Runtime at ORT_DISABLE_ALL on it, a second floor")
    a = ap.parse_args()
    try:
        doc = compare(a)
    except OSError as e:
        raise RuntimeError("compare: %s: %s" % (e.filename or a.work, e.strerror))
    except RuntimeError as e:
        raise RuntimeError("compare: %s" % e)
    except Exception as e:  # a model this script does not expect: one line, as loom's "internal error"
        raise RuntimeError("compare: internal error: %s: %s" % (type(e).__name__, first_line(e)))
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(doc, f)
    else:
        if a.layers:
            print(table(doc["layers"]))
        print(summary(doc))
    below = doc["below_min_cosine"]
    if below:
        r = doc["layers"][below[0]]
        print("loom: error: compare: layer %s has cosine %s < --min-cosine %s (%d of %d layers below)" % (
            layer_name(r), cos_str(r["loom"]["cosine"]), a.min_cosine, len(below), len(doc["layers"])),
            file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    script_main("loom", main)
