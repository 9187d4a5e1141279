#!/usr/bin/env python3
"""Checks each loom HLS kernel's Vitis setup without Vitis: hls_config.cfg
names the U55C part, a clock, an existing syn.file whose extern "C" top is
syn.top, and an existing tb.file; the top's pointer arguments each have an
m_axi pragma on its own gmem bundle and an s_axilite pragma, every scalar
argument and the return value an s_axilite pragma, and the dataflow region
exists; scripts/vitis/Makefile's HLS_ARGS_<kernel> (the arguments the link
connects to memory) are exactly the top's pointer arguments. Prints one line
per problem; exit 1 when there is any."""
import pathlib
import re
import sys

HLS = pathlib.Path(__file__).resolve().parent
KERNELS = ["gemm", "conv", "pool", "eltwise"]
PART = "xcu55c-fsvh2892-2L-e"


def parse_cfg(path):
    keys = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("["):
            continue
        k, _, v = line.partition("=")
        keys.setdefault(k.strip(), []).append(v.strip())
    return keys


def top_args(src, top):
    m = re.search(r'extern "C" int ' + re.escape(top) + r"\(([^)]*)\)\s*\{", src)
    if not m:
        return None
    args = []
    for a in m.group(1).split(","):
        a = " ".join(a.split())
        name = a.split()[-1].lstrip("*")
        args.append((name, "*" in a))
    return args


def check(kernel, problems):
    d = HLS / kernel
    cfg_path = d / "hls_config.cfg"
    if not cfg_path.exists():
        problems.append(f"{cfg_path}: missing")
        return
    cfg = parse_cfg(cfg_path)
    where = str(cfg_path.relative_to(HLS.parent))
    if cfg.get("part") != [PART]:
        problems.append(f"{where}: part is {cfg.get('part')}, expected {PART}")
    if "clock" not in cfg:
        problems.append(f"{where}: no clock")
    if cfg.get("flow_target") != ["vitis"]:
        problems.append(f"{where}: flow_target is not vitis")
    for key in ("syn.file", "tb.file"):
        for f in cfg.get(key, []):
            if not (d / f).exists():
                problems.append(f"{where}: {key}={f} does not exist")
        if key not in cfg:
            problems.append(f"{where}: no {key}")
    top = (cfg.get("syn.top") or [""])[0]
    if not cfg.get("syn.file") or not (d / cfg["syn.file"][0]).exists():
        return
    src = (d / cfg["syn.file"][0]).read_text()
    args = top_args(src, top)
    if args is None:
        problems.append(f'{where}: syn.top={top} is not an extern "C" function defined in {cfg["syn.file"][0]}')
        return
    bundles = []
    for name, is_ptr in args:
        if is_ptr:
            m = re.search(r"#pragma HLS INTERFACE m_axi port = " + name + r" .*bundle = (gmem\d+)", src)
            if not m:
                problems.append(f"{kernel}: pointer argument '{name}' has no m_axi pragma with a gmem bundle")
            else:
                bundles.append(m.group(1))
        if not re.search(r"#pragma HLS INTERFACE s_axilite port = " + name + r" bundle = control", src):
            problems.append(f"{kernel}: argument '{name}' has no s_axilite pragma")
    if len(set(bundles)) != len(bundles):
        problems.append(f"{kernel}: pointer arguments share a bundle: {bundles}")
    if "#pragma HLS INTERFACE s_axilite port = return bundle = control" not in src:
        problems.append(f"{kernel}: no s_axilite pragma for the return value")
    if "#pragma HLS DATAFLOW" not in src:
        problems.append(f"{kernel}: no DATAFLOW region")
    makefile = (HLS.parent / "scripts" / "vitis" / "Makefile").read_text()
    m = re.search(r"^HLS_ARGS_" + kernel + r"\s*:=(.*)$", makefile, re.M)
    pointers = [name for name, is_ptr in args if is_ptr]
    if not m or m.group(1).split() != pointers:
        problems.append(f"scripts/vitis/Makefile: HLS_ARGS_{kernel} is {m.group(1).split() if m else None}, "
                        f"the top's pointer arguments are {pointers}")


def main():
    problems = []
    for k in KERNELS:
        check(k, problems)
    for p in problems:
        print(p, file=sys.stderr)
    if not problems:
        print(f"hls.configs: {len(KERNELS)} kernels checked")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
