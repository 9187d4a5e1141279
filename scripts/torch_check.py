#!/usr/bin/env python3
"""Exports torchvision architectures (random weights) with PyTorch's ONNX
exporter, quantizes them with ONNX Runtime's quantize_static (QDQ, the zoo's
options), and runs each through `loom run --check --json` on a backend.
Needs torch and torchvision (a venv by hand; setup and CI do not install
them). Prints one line a model: segments, host ops inside, bit-exact, % of
peak MACs, agreement with ONNX Runtime.

  torch_check.py --loom L [--backend tlm] [--config default] [--models a,b] [--opset 17] [--dynamo] [--work DIR]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = ["resnext50_32x4d", "regnet_y_400mf", "efficientnet_b0", "mobilenet_v3_large", "squeezenet1_1",
          "googlenet", "densenet121", "shufflenet_v2_x1_0", "convnext_tiny", "vit_b_16", "lraspp_mobilenet_v3_large"]


def export(name, path, opset, dynamo, size):
    import torch
    import torchvision

    torch.manual_seed(1)
    if name.startswith("lraspp"):
        m = torchvision.models.segmentation.__dict__[name](weights=None, weights_backbone=None, num_classes=21)
    elif name == "googlenet":
        m = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=True)
    else:
        m = torchvision.models.__dict__[name](weights=None)
    m.eval()
    x = torch.randn(1, 3, size, size)

    class Out(torch.nn.Module):  # segmentation models return a dict
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            y = self.m(x)
            return y["out"] if isinstance(y, dict) else y

    torch.onnx.export(Out(m), (x,), path, opset_version=opset, input_names=["input"], output_names=["output"],
                      dynamo=dynamo)
    return x.numpy()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--loom", required=True)
    ap.add_argument("--backend", default="tlm")
    ap.add_argument("--config", default="default")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--dynamo", action="store_true")
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--work", default="/tmp/torch_check")
    a = ap.parse_args()
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    import numpy as np
    import onnx
    from onnx import numpy_helper

    import zoo
    import ort_peer

    os.makedirs(a.work, exist_ok=True)
    for name in a.models.split(","):
        d = os.path.join(a.work, name + ("_dynamo" if a.dynamo else "") + "_o%d" % a.opset)
        os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
        fpath = os.path.join(d, "float.onnx")
        try:
            x = export(name, fpath, a.opset, a.dynamo, a.size)
            fm = onnx.load(fpath)
            import tempfile
            with tempfile.TemporaryDirectory() as tmp:
                qm = zoo.quantize(fm, 1, tmp)
            qpath = os.path.join(d, "model.onnx")
            onnx.save(qm, qpath)
            feeds = {qm.graph.input[0].name: x}
            ref = zoo.run_ort(qm.SerializeToString(), feeds)[0]
        except Exception as e:  # noqa: BLE001
            print("%s: export/quantize failed: %s" % (name, str(e).splitlines()[0][:200]))
            continue
        inp = os.path.join(d, "test_data_set_0", "input_0.pb")
        open(inp, "wb").write(numpy_helper.from_array(x, qm.graph.input[0].name).SerializeToString())
        out = os.path.join(d, "out")
        r = subprocess.run([a.loom, "run", qpath, "--backend", a.backend, "--config", a.config, "--check", "--json",
                            "--inputs", inp, "--outputs", out], capture_output=True, text=True)
        if r.returncode != 0:
            print("%s: loom failed: %s" % (name, r.stderr.strip()[:300]))
            continue
        j = json.loads(r.stdout)
        inner = [h["op"] for h in j["host_ops"] if h["op"] not in ("QuantizeLinear", "DequantizeLinear")]
        got = ort_peer.load_pb(os.path.join(out, "output_0.pb"))
        # Equal outputs agree fully, zero ones too (ViT's head starts at zero).
        cos = 1.0 if np.array_equal(got, ref) else float(
            np.dot(got.ravel(), ref.ravel()) / (np.linalg.norm(got) * np.linalg.norm(ref) + 1e-30))
        macs = sum(l["macs"] for l in j["layers"])
        print("%s: opset %d ir %d, %d segments, %d host ops inside %s, bit_exact %s, cycles %s, %.3f GMAC, "
              "cosine vs ORT %.4f" % (name, a.opset, qm.ir_version, len(j["segments"]), len(inner),
                                       sorted(set(inner)), j["bit_exact"], j.get("cycles"), macs / 1e9, cos))


if __name__ == "__main__":
    main()
