#!/usr/bin/env python3
"""Float host kernels that loom computes as ONNX Runtime does, bit for bit:
Resize in linear mode (docs/onnx.md "Resize"), on every input layout ONNX
Runtime's kernels interpolate (rank 2 and 3, NCHW and NHWC, rank 5), with
scales and sizes, up and down, in every coordinate transformation mode.
Each case runs the one-node float model through `loom run` (host ops only)
and through ONNX Runtime (ORT_DISABLE_ALL), and the outputs must be the
same floats.

Usage: host_vs_ort_test.py LOOM
"""
import math
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

LOOM = None

CASES = [
    ((1, 3, 7, 9), {"scales": [1, 1, 2, 2]}, "half_pixel"),
    ((2, 4, 5, 6), {"scales": [1, 1, 3.5, 1.7]}, "half_pixel"),
    ((1, 7, 9, 3), {"scales": [1, 2, 2, 1]}, "half_pixel"),
    ((7, 9), {"scales": [2, 3]}, "asymmetric"),
    ((4, 5, 6), {"scales": [2, 1.5, 0.5]}, "half_pixel"),
    ((1, 3, 8, 8), {"scales": [1, 1, 0.5, 0.75]}, "pytorch_half_pixel"),
    ((1, 3, 7, 9), {"sizes": [1, 3, 20, 25]}, "align_corners"),
    ((1, 2, 9, 11), {"sizes": [1, 2, 4, 5]}, "align_corners"),
    ((1, 3, 7, 9), {"sizes": [1, 3, 20, 25]}, "pytorch_half_pixel"),
    ((1, 2, 3, 5, 6), {"scales": [1, 1, 2, 2, 2]}, "half_pixel"),
]


def resize_model(shape, ct, scales=None, sizes=None):
    inits = []
    if scales is not None:
        inits.append(helper.make_tensor("s", TensorProto.FLOAT, [len(scales)], scales))
        names, out = ["x", "", "s"], [int(math.floor(d * s)) for d, s in zip(shape, scales)]
    else:
        inits.append(helper.make_tensor("z", TensorProto.INT64, [len(sizes)], sizes))
        names, out = ["x", "", "", "z"], list(sizes)
    node = helper.make_node("Resize", names, ["y"], mode="linear", coordinate_transformation_mode=ct)
    g = helper.make_graph([node], "resize", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, out)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def ort_run(m, x):
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


class HostVsOrt(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom_host_ort_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def loom_run(self, m, x):
        d = tempfile.mkdtemp(dir=self.dir)
        path, xin, out = os.path.join(d, "m.onnx"), os.path.join(d, "x.pb"), os.path.join(d, "out")
        onnx.save(m, path)
        with open(xin, "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        r = subprocess.run([LOOM, "run", path, "--inputs", xin, "--outputs", out], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        return numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "output_0.pb")))

    def test_resize_linear_is_onnx_runtimes_floats(self):
        rng = np.random.default_rng(1)
        for shape, size, ct in CASES:
            with self.subTest(shape=shape, size=size, ct=ct):
                x = (rng.standard_normal(shape) * 10).astype(np.float32)
                m = resize_model(shape, ct, **size)
                want, got = ort_run(m, x), self.loom_run(m, x)
                self.assertEqual(got.shape, want.shape)
                self.assertEqual(np.count_nonzero(got != want), 0,
                                 "max |diff| %g" % float(np.abs(got.astype(np.float64) - want).max()))


if __name__ == "__main__":
    LOOM = sys.argv.pop(1)
    unittest.main()
