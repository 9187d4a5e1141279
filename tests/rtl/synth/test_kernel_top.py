#!/usr/bin/env python3
"""Checks the generated Vitis kernel tops: fresh, and with the port set a Vitis RTL kernel is packaged with.

For every configuration in docs/spec/configs.yaml, rtl/generated/loom_top_<name>.sv
must match scripts/gen_kernel_top.py's output and declare exactly: ap_clk,
ap_rst_n, the AXI4-Lite slave s_axi_control_* (12-bit addresses, 32-bit
data), one full AXI4 master m_axi_gmem<p>_* per memory port (64-bit
addresses, the configuration's data width) and interrupt; its fabric
parameters must be loom_pkg::CFG_<NAME>_* names, not numbers.

Usage: test_kernel_top.py [LOOM_ROOT]
"""
import os
import re
import subprocess
import sys

import yaml

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
ROOT = os.path.abspath(ROOT)

CSR = {"awvalid": ("input", 1), "awready": ("output", 1), "awaddr": ("input", 12),
       "wvalid": ("input", 1), "wready": ("output", 1), "wdata": ("input", 32), "wstrb": ("input", 4),
       "bvalid": ("output", 1), "bready": ("input", 1), "bresp": ("output", 2),
       "arvalid": ("input", 1), "arready": ("output", 1), "araddr": ("input", 12),
       "rvalid": ("output", 1), "rready": ("input", 1), "rdata": ("output", 32), "rresp": ("output", 2)}


def axi4(data_w):
    m = {}
    for ch in ("aw", "ar"):
        m.update({ch + "valid": ("output", 1), ch + "ready": ("input", 1), ch + "addr": ("output", 64),
                  ch + "id": ("output", 4), ch + "len": ("output", 8), ch + "size": ("output", 3),
                  ch + "burst": ("output", 2), ch + "lock": ("output", 1), ch + "cache": ("output", 4),
                  ch + "prot": ("output", 3), ch + "qos": ("output", 4), ch + "region": ("output", 4)})
    m.update({"wvalid": ("output", 1), "wready": ("input", 1), "wdata": ("output", data_w),
              "wstrb": ("output", data_w // 8), "wlast": ("output", 1),
              "bvalid": ("input", 1), "bready": ("output", 1), "bresp": ("input", 2), "bid": ("input", 4),
              "rvalid": ("input", 1), "rready": ("output", 1), "rdata": ("input", data_w),
              "rresp": ("input", 2), "rlast": ("input", 1), "rid": ("input", 4)})
    return m


def width(rng, env):
    if not rng:
        return 1
    hi, lo = rng.split(":")
    return eval(hi.replace("-1", "- 1"), {}, env) - int(lo) + 1  # noqa: S307 (generated text)


def main():
    failures = []
    r = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_kernel_top.py"), "--check",
                        "--root", ROOT], capture_output=True, text=True)
    if r.returncode != 0:
        failures.append("gen_kernel_top.py --check failed:\n" + r.stderr)
    with open(os.path.join(ROOT, "docs", "spec", "configs.yaml")) as f:
        cfgs = yaml.safe_load(f)["configs"]
    for c in cfgs:
        name = c["name"]
        path = os.path.join(ROOT, "rtl", "generated", "loom_top_%s.sv" % name)
        if not os.path.exists(path):
            failures.append("%s: missing" % path)
            continue
        text = open(path).read()
        data_w = c["mem_width_bits"]
        env = {"DataW": data_w, "MemBytes": data_w // 8, "IdW": 4}
        ports = {}
        for m in re.finditer(r"^\s*(input|output)\s+logic\s*(?:\[([^\]]+)\])?\s*(\w+)", text, re.M):
            ports[m.group(3)] = (m.group(1), width(m.group(2), env))
        want = {"ap_clk": ("input", 1), "ap_rst_n": ("input", 1), "interrupt": ("output", 1)}
        want.update({"s_axi_control_" + k: v for k, v in CSR.items()})
        for p in range(c["mem_ports"]):
            want.update({"m_axi_gmem%d_%s" % (p, k): v for k, v in axi4(data_w).items()})
        for k in sorted(set(want) | set(ports)):
            if want.get(k) != ports.get(k):
                failures.append("loom_top_%s: port %s: want %s, have %s" % (name, k, want.get(k), ports.get(k)))
        for p in ("CORES", "ARRAY_ROWS", "ARRAY_COLS", "IN_KIB", "WGT_KIB", "ACC_KIB", "OUT_KIB",
                  "PARAM_KIB", "MEM_PORTS", "MEM_WIDTH_BITS", "SEMAPHORES", "RING_DEPTH"):
            if "loom_pkg::CFG_%s_%s" % (name.upper(), p) not in text:
                failures.append("loom_top_%s: does not take %s from loom_pkg" % (name, p))
        if "loom_fabric #(" not in text:
            failures.append("loom_top_%s: no loom_fabric instance" % name)
    for f in failures:
        print("FAIL: " + f)
    print("test_kernel_top: %d configuration(s), %d failure(s)" % (len(cfgs), len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
