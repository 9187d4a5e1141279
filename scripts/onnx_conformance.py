#!/usr/bin/env python3
"""ONNX conformance: run libonnx-testdata's backend node tests through the
`loom` CLI exactly as a user would and compare with the expected outputs.

  loom run model.onnx --inputs input_0.pb ... --outputs DIR --backend B

Integer outputs must be bit-exact; float outputs (host fallback ops) must be
within the ONNX backend test runner's tolerance (rtol 1e-3, atol 1e-7).

A test is selected when every op of its graph is claimed
(tests/onnx/claimed_ops.txt) and its default-domain opset is one loom
supports (10..17). `--write-doc` regenerates docs/conformance.md.

  scripts/onnx_conformance.py --loom build/ci/bin/loom --backend ref --write-doc docs/conformance.md
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA_DIRS = ["/usr/share/libonnx-testdata/data/node", "/usr/share/onnx/backend/test/data/node"]
MIN_OPSET, MAX_OPSET = 10, 21
RTOL, ATOL = 1e-3, 1e-7


def claimed_ops():
    ops = []
    with open(os.path.join(ROOT, "tests/onnx/claimed_ops.txt")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                ops.append(line)
    return ops


def data_dir(arg):
    for d in ([arg] if arg else DATA_DIRS):
        if d and os.path.isdir(d):
            return d
    sys.exit("onnx_conformance: no node test data (install libonnx-testdata or pass --data)")


def describe(test_dir):
    m = onnx.load(os.path.join(test_dir, "model.onnx"), load_external_data=False)
    opset = None
    for o in m.opset_import:
        if o.domain in ("", "ai.onnx"):
            opset = o.version
    ops = sorted({n.op_type for n in m.graph.node})
    # Zero-sized tensors are outside loom's import contract (every dim >= 1).
    empty = any(d.HasField("dim_value") and d.dim_value == 0
                for v in list(m.graph.input) + list(m.graph.output)
                for d in v.type.tensor_type.shape.dim)
    return ops, opset, empty


def select(data, ops_claimed, only_op=None):
    tests, skipped = [], []
    for d in sorted(glob.glob(os.path.join(data, "test_*"))):
        if not os.path.isfile(os.path.join(d, "model.onnx")):
            continue
        ops, opset, empty = describe(d)
        if not ops or not set(ops) <= set(ops_claimed):
            continue
        if only_op and only_op not in ops:
            continue
        name = os.path.basename(d)
        if opset is None or opset < MIN_OPSET or opset > MAX_OPSET:
            skipped.append((name, ops, "opset %s outside %d..%d" % (opset, MIN_OPSET, MAX_OPSET)))
            continue
        if empty:
            skipped.append((name, ops, "zero-sized tensor (loom requires every dim >= 1)"))
            continue
        tests.append((name, d, ops))
    return tests, skipped


def numbered(paths):
    return sorted(paths, key=lambda p: int(os.path.basename(p).split("_")[1].split(".")[0]))


def run_test(loom, backend, test_dir):
    """Returns (passed, detail) over all test_data_set_* of the test."""
    sets = sorted(glob.glob(os.path.join(test_dir, "test_data_set_*")))
    if not sets:
        return False, "no test data"
    for s in sets:
        inputs = numbered(glob.glob(os.path.join(s, "input_*.pb")))
        expected = numbered(glob.glob(os.path.join(s, "output_*.pb")))
        with tempfile.TemporaryDirectory() as out:
            cmd = [loom, "run", os.path.join(test_dir, "model.onnx"), "--backend", backend, "--outputs", out]
            if inputs:
                cmd += ["--inputs"] + inputs
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
            if p.returncode != 0:
                return False, (p.stderr.strip().splitlines() or ["exit %d" % p.returncode])[-1]
            for k, e in enumerate(expected):
                got_path = os.path.join(out, "output_%d.pb" % k)
                if not os.path.isfile(got_path):
                    return False, "output_%d.pb not written" % k
                want = numpy_helper.to_array(onnx.load_tensor(e))
                got = numpy_helper.to_array(onnx.load_tensor(got_path))
                if want.shape != got.shape or want.dtype != got.dtype:
                    return False, "output_%d: %s %s, expected %s %s" % (k, got.dtype, got.shape, want.dtype, want.shape)
                if np.issubdtype(want.dtype, np.floating):
                    if not np.allclose(got, want, rtol=RTOL, atol=ATOL, equal_nan=True):
                        err = np.max(np.abs(got.astype(np.float64) - want))
                        return False, "output_%d: max abs error %.3g beyond rtol %g atol %g" % (k, err, RTOL, ATOL)
                elif not np.array_equal(got, want):
                    return False, "output_%d: %d of %d elements differ" % (k, int(np.sum(got != want)), want.size)
    return True, ""


def write_doc(path, backends, results, skipped, ops_claimed, failing_ops):
    lines = [
        "# ONNX conformance",
        "",
        "Generated by `scripts/onnx_conformance.py` (do not edit by hand). Regenerate with:",
        "",
        "```",
        "scripts/onnx_conformance.py --loom build/ci/bin/loom --backend %s --write-doc docs/conformance.md" % " --backend ".join(backends),
        "```",
        "",
        "Every node test of Debian's `libonnx-testdata` whose ops are all claimed (list in",
        "`tests/onnx/claimed_ops.txt`) and whose opset is one loom supports (%d..%d) runs through" % (MIN_OPSET, MAX_OPSET),
        "the CLI as a user runs it: `loom run model.onnx --inputs input_*.pb --outputs DIR --backend B`, then",
        "each `output_k.pb` is compared with the test's: integer outputs bit-exact, float outputs within",
        "the ONNX backend runner's tolerance (rtol %g, atol %g). Ops the fabric runs (QLinearConv," % (RTOL, ATOL),
        "QLinearMatMul, MaxPool on int8/uint8, ...) run on the backend; the rest on the host fallback",
        "(`fallback_ops` in `loom run --json`). CTest runs the same per op (label `onnx`) on ref, and on",
        "tlm for the ops with tests on the fabric (QLinearConv, QLinearMatMul, MaxPool).",
        "",
        "| op | tests | " + " | ".join("passed (%s)" % b for b in backends) + " |",
        "|---|---|" + "---|" * len(backends),
    ]
    for op in ops_claimed:
        row = [r for r in results[backends[0]] if op in r[1]]
        cells = []
        for b in backends:
            cells.append(str(sum(1 for r in results[b] if op in r[1] and r[2])))
        lines.append("| %s | %d | %s |" % (op, len(row), " | ".join(cells)))
    total = len(results[backends[0]])
    lines += ["", "Total: %d tests; " % total + ", ".join(
        "%d passed on %s" % (sum(1 for r in results[b] if r[2]), b) for b in backends) + "."]
    if failing_ops:
        lines += ["", "**Failing (so not claimed until fixed):**", ""]
        for b in backends:
            for name, ops, ok, detail in results[b]:
                if not ok:
                    lines.append("- %s on %s: %s" % (name, b, detail))
    if skipped:
        lines += ["", "Not run: tests outside loom's import contract, which loom rejects with a one-line error",
                  "(opsets outside %d..%d; zero-sized tensors):" % (MIN_OPSET, MAX_OPSET), ""]
        for s in skipped:
            lines.append("- `%s` (%s): %s" % (s[0], ", ".join(s[1]), s[2]))
    lines.append("")
    with open(path, "w") as f:
        f.write("\n".join(lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--loom", required=True, help="path of the loom executable")
    ap.add_argument("--backend", action="append", help="backend(s) to run on (default: ref)")
    ap.add_argument("--data", help="node test folder (default: libonnx-testdata's)")
    ap.add_argument("--op", help="only tests that use this op")
    ap.add_argument("--write-doc", help="write the markdown table to this file")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args()
    backends = a.backend or ["ref"]
    ops_claimed = claimed_ops()
    if a.op and a.op not in ops_claimed:
        sys.exit("onnx_conformance: op '%s' is not claimed (tests/onnx/claimed_ops.txt)" % a.op)
    tests, skipped = select(data_dir(a.data), ops_claimed, a.op)
    if not tests:
        sys.exit("onnx_conformance: no tests selected")
    results = {}
    failing = set()
    for b in backends:
        results[b] = []
        for name, d, ops in tests:
            ok, detail = run_test(a.loom, b, d)
            results[b].append((name, ops, ok, detail))
            if not ok:
                failing.update(ops)
            if a.verbose or not ok:
                print("%-55s %-4s %s %s" % (name, b, "ok" if ok else "FAIL", detail))
        print("%s: %d/%d passed" % (b, sum(1 for r in results[b] if r[2]), len(tests)))
    if a.write_doc:
        write_doc(a.write_doc, backends, results, skipped, ops_claimed, failing)
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
