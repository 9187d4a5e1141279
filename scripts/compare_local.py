"""`loom compare --local`: each quantized tensor computed again from ONNX
Runtime's own codes of the tensors it reads (scripts/compare.py; docs/onnx.md).

A tensor's difference in the whole-model comparison is what its op adds and
what it inherits from every differing code upstream. Here each quantized
tensor's part of the graph (the nodes between it and the quantized tensors,
constants and graph inputs it reads: DequantizeLinear -> op -> QuantizeLinear,
or one QLinear* op) becomes a model of its own, whose inputs are ONNX Runtime's
codes of those tensors (ORT_DISABLE_ALL, from the whole model's run). ONNX
Runtime at ORT_DISABLE_ALL and `loom run --backend ref` run that model, and
their codes are compared: the rounding the op itself adds, as the ONNX
operator and loom's integer kernel each compute it from the same operands.
"""
import os

import ort_peer


def parts(model, order, quantized):
    """{layer tensor: (node places in `order`, boundary tensors)} for each
    tensor in `quantized`: the nodes that compute it from other quantized
    tensors, initializers, and graph inputs, and those tensors it reads
    (quantized tensors and graph inputs; initializers travel with the nodes)."""
    nodes = model.graph.node
    inits = {t.name for t in model.graph.initializer}
    producer = {o: k for k, n in enumerate(nodes) for o in n.output}
    rank = {k: r for r, k in enumerate(order)}
    out = {}
    for tensor in quantized:
        keep, bound, todo = set(), [], [producer[tensor]]
        while todo:
            k = todo.pop()
            if k in keep:
                continue
            keep.add(k)
            for i in nodes[k].input:
                if not i or i in inits:
                    continue
                if i in quantized or i not in producer:
                    if i not in bound:
                        bound.append(i)
                else:
                    todo.append(producer[i])
        out[tensor] = (sorted(keep, key=rank.get), bound)
    return out


def part_model(model, places, bound, tensor, values):
    """The model of one part: `bound` as its graph inputs (typed and shaped
    as `values` holds them), `tensor` its one output."""
    import onnx
    from onnx import helper

    nodes = [model.graph.node[k] for k in places]
    used = {i for n in nodes for i in n.input}
    made = {o for n in nodes for o in n.output}
    g = helper.make_graph(
        nodes, "local_" + tensor,
        [helper.make_tensor_value_info(b, helper.np_dtype_to_tensor_dtype(values[b].dtype), list(values[b].shape))
         for b in bound],
        [helper.make_tensor_value_info(tensor, helper.np_dtype_to_tensor_dtype(values[tensor].dtype),
                                       list(values[tensor].shape))],
        [t for t in model.graph.initializer if t.name in used],
        value_info=[v for v in model.graph.value_info if v.name in made and v.name != tensor])
    m = helper.make_model(g, opset_imports=list(model.opset_import), ir_version=model.ir_version)
    m.functions.extend(model.functions)
    return m


def run_part(loom, model, tensor, bound, values, zero_point, work):
    """loom against ONNX Runtime on one part: ort_peer.compare's agreement and
    the number of tensors it reads, or {"error": one line}."""
    import numpy as np
    import onnx
    from onnx import numpy_helper

    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, "part.onnx")
    onnx.save(model, path)
    files = []
    for k, b in enumerate(bound):
        files.append(os.path.join(work, "input_%d.pb" % k))
        with open(files[-1], "wb") as f:
            f.write(numpy_helper.from_array(values[b], b).SerializeToString())
    import onnxruntime as ort

    try:
        want = ort_peer.ort_run(path, {b: values[b] for b in bound}, ort.GraphOptimizationLevel.ORT_DISABLE_ALL)[0]
    except Exception as e:  # ONNX Runtime raises its own exception types
        return {"error": "ONNX Runtime cannot run it alone: %s" % ort_peer.first_line(e)}
    out = os.path.join(work, "out")
    got, err, _ = ort_peer.run_loom(loom, "ref", path, files, out, 600)
    if err:
        return {"error": "loom run --backend ref: " + err.replace("loom: error: ", "").replace(path, tensor)}
    got = ort_peer.load_pb(got)
    if got.shape != want.shape:
        return {"error": "loom's shape %s, ONNX Runtime's %s" % (list(got.shape), list(want.shape))}
    r = ort_peer.compare(got, want, np.asarray(zero_point).astype(np.int64))
    r["inputs"] = len(bound)
    return r


def local_rows(loom, model, order, layers, values, work):
    """{layer tensor: its local agreement} for every layer (`values`: ONNX
    Runtime's codes of every quantized tensor and the graph inputs)."""
    quantized = {l.tensor for l in layers}
    found = parts(model, order, quantized)
    res = {}
    for k, l in enumerate(layers):
        places, bound = found[l.tensor]
        missing = [b for b in bound if b not in values]
        if missing:
            res[l.tensor] = {"error": "reads '%s', which is neither a quantized tensor nor a graph input" % missing[0]}
            continue
        m = part_model(model, places, bound, l.tensor, values)
        res[l.tensor] = run_part(loom, m, l.tensor, bound, values, l.zero_point, os.path.join(work, "local_%d" % k))
    return res

