#!/usr/bin/env python3
"""A standalone BatchNormalization (DQ -> BatchNormalization -> Q, no conv
to fold into) is identical to ONNX Runtime on every input value of every
channel.

loom runs such a BN as a depthwise 1x1 convolution whose weight, bias and
weight scale it chooses per channel at import (docs/onnx.md "Rounding, op by
op"). Each model here feeds every channel all 256 values of its int8 (or
uint8) input, over channels with random factors and shifts as trained
networks have them, some clamping at either end of the output. `loom run
--backend ref --check` must run the BN on the device and agree with ONNX
Runtime (ORT_DISABLE_ALL: DequantizeLinear, BatchNormalization and
QuantizeLinear in float32) on every element.

Usage: bn_exhaustive_test.py LOOM
"""
import json
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
C = 384  # channels a model


def bn_model(rng, dtype, sx, zx, sy, zy):
    """x -> Q(sx, zx) -> DQ -> BN -> Q(sy, zy) -> DQ -> y over [1, C, 16, 16]."""
    qt = TensorProto.INT8 if dtype == np.int8 else TensorProto.UINT8
    g = (rng.uniform(0.2, 3.0, C) * rng.choice([-1, 1], C)).astype(np.float32)
    inits = [
        helper.make_tensor("sx", TensorProto.FLOAT, [], [sx]),
        helper.make_tensor("zx", qt, [], [zx]),
        helper.make_tensor("sy", TensorProto.FLOAT, [], [sy]),
        helper.make_tensor("zy", qt, [], [zy]),
        numpy_helper.from_array(g, "g"),
        numpy_helper.from_array(rng.standard_normal(C).astype(np.float32), "b"),
        numpy_helper.from_array((rng.standard_normal(C) * 0.5).astype(np.float32), "mean"),
        numpy_helper.from_array(rng.uniform(0.05, 4.0, C).astype(np.float32), "var"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["x", "sx", "zx"], ["xq"], name="qx"),
        helper.make_node("DequantizeLinear", ["xq", "sx", "zx"], ["xd"], name="dqx"),
        helper.make_node("BatchNormalization", ["xd", "g", "b", "mean", "var"], ["bn"], name="bn"),
        helper.make_node("QuantizeLinear", ["bn", "sy", "zy"], ["yq"], name="qy"),
        helper.make_node("DequantizeLinear", ["yq", "sy", "zy"], ["y"], name="dqy"),
    ]
    shape = [1, C, 16, 16]
    gr = helper.make_graph(nodes, "bn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                           [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    m = helper.make_model(gr, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def every_value(rng, dtype, sx, zx):
    """Each channel's 256 pixels hold every value of the quantized type once, shuffled."""
    lo = -128 if dtype == np.int8 else 0
    q = np.stack([rng.permutation(256) + lo for _ in range(C)]).reshape(1, C, 16, 16)
    return ((q - zx).astype(np.float32) * np.float32(sx)).astype(np.float32), q


class BnExhaustive(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="loom_bn_")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def check(self, dtype, sx, zx, sy, zy, seed):
        rng = np.random.default_rng(seed)
        m = bn_model(rng, dtype, sx, zx, sy, zy)
        x, q = every_value(rng, dtype, sx, zx)
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        s = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        want = s.run(["y"], {"x": x})[0]
        d = tempfile.mkdtemp(dir=self.dir)
        path, xin, out = os.path.join(d, "m.onnx"), os.path.join(d, "x.pb"), os.path.join(d, "out")
        onnx.save(m, path)
        with open(xin, "wb") as f:
            f.write(numpy_helper.from_array(x, "x").SerializeToString())
        r = subprocess.run([LOOM, "run", path, "--inputs", xin, "--outputs", out, "--backend", "ref", "--check",
                            "--json"], capture_output=True, text=True, timeout=300)
        self.assertEqual(r.returncode, 0, r.stderr)
        j = json.loads(r.stdout)
        dev = [n for seg in j["segments"] for n in seg["nodes"]]
        self.assertIn("bn", dev, "the BatchNormalization did not run on the device: %s" % j["fallback_ops"])
        got = numpy_helper.to_array(onnx.load_tensor(os.path.join(out, "output_0.pb")))
        lsb = np.rint((got.astype(np.float64) - want) / sy)
        bad = np.argwhere(lsb != 0)
        self.assertEqual(len(bad), 0, "%d of %d elements differ from ONNX Runtime, the first at channel %d, input %d"
                         % (len(bad), got.size, bad[0][1] if len(bad) else -1,
                            q[tuple(bad[0])] if len(bad) else 0))

    def test_int8(self):
        self.check(np.int8, 0.0807, 1, 0.0464, -128, 1)
        self.check(np.int8, 0.021, -7, 0.093, 5, 2)

    def test_uint8(self):
        self.check(np.uint8, 0.0611, 131, 0.0297, 0, 3)
        self.check(np.uint8, 0.0153, 120, 0.071, 129, 4)


if __name__ == "__main__":
    LOOM = sys.argv.pop(1)
    unittest.main()
