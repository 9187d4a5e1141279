#!/usr/bin/env python3
"""Tests of the loom Vitis board flow that run without the AMD tools.

  test_vitis_flow.py timing        check_timing.py on sample reports: met -> 0,
                                   setup or hold violated -> 1, unreadable -> 2
  test_vitis_flow.py env           every flow target stops at the environment
                                   check with one clear line and writes nothing
  test_vitis_flow.py kernel_xml    gen_kernel_xml.py for every configuration
                                   agrees with the RTL top's ports and with the
                                   register offsets in host/spec/loom/spec_gen.h
  test_vitis_flow.py link_configs  constraints/*.cfg connect exactly the
                                   configuration's gmem ports at its clock
  test_vitis_flow.py make_flow     the Makefile's targets with stand-in v++ /
                                   vivado / emconfigutil that record their
                                   arguments: what each tool is called with,
                                   the timing check after a hw link, bad
                                   BOARD / TARGET / PLATFORM
  test_vitis_flow.py package_tcl   package_kernel.tcl under tclsh with the
                                   Vivado commands stood in (mock_vivado.tcl):
                                   sources, interfaces, register map, package_xo
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VITIS = os.path.join(ROOT, "scripts", "vitis")
DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
SKIP = 77

failures = []


def expect(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL " + what, file=sys.stderr)


def run(cmd, env=None):
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)


def configs():
    with open(os.path.join(ROOT, "docs", "spec", "configs.yaml")) as f:
        return {c["name"]: c for c in yaml.safe_load(f)["configs"]}


def test_timing():
    checker = os.path.join(VITIS, "check_timing.py")
    cases = [
        ("timing_met.rpt", 0, r"WNS 0\.087 ns, WHS 0\.010 ns: met"),
        ("timing_setup_violated.rpt", 1, r"WNS -0\.251 ns \(TNS -38\.112 ns, 412 failing endpoints\): negative setup"),
        ("timing_hold_violated.rpt", 1, r"WHS -0\.034 ns .*negative hold slack"),
        ("timing_unconstrained.rpt", 2, r"no constrained paths"),
        ("does_not_exist.rpt", 2, r"does_not_exist\.rpt: No such file"),
        (os.path.join("..", "test_vitis_flow.py"), 2, r"no Design Timing Summary table"),
    ]
    for name, code, pattern in cases:
        r = run([sys.executable, checker, os.path.join(DATA, name)])
        out = (r.stdout + r.stderr).strip()
        expect(r.returncode == code, f"check_timing {name}: exit {r.returncode}, want {code} ({out})")
        expect(re.search(pattern, out) is not None, f"check_timing {name}: output '{out}' lacks /{pattern}/")
        expect(len(out.splitlines()) == 1, f"check_timing {name}: {len(out.splitlines())} lines, want one")


def test_env():
    # A PATH with the basic tools but without the AMD ones.
    env = {k: v for k, v in os.environ.items() if k not in ("XILINX_XRT", "XILINX_VITIS", "XILINX_VIVADO")}
    env["PATH"] = "/usr/bin:/bin"
    for tool in ("v++", "vivado"):
        if shutil.which(tool, path=env["PATH"]):
            print(f"{tool} is installed in /usr/bin or /bin: the missing-tool path cannot be tested here")
            return SKIP
    out_dir = tempfile.mkdtemp(prefix="loom-vitis-env-")
    os.rmdir(out_dir)  # must not be created by a target that stops at the check
    try:
        for target in ("xo", "xclbin", "emconfig", "run", "check-env"):
            r = run(["make", "--no-print-directory", "-s", "-C", VITIS, target, f"OUT={out_dir}"], env=env)
            ours = [l for l in r.stderr.splitlines() if l.startswith("loom vitis flow:")]
            expect(r.returncode != 0, f"make {target} without Vitis: exit 0")
            expect(len(ours) == 1, f"make {target}: {len(ours)} 'loom vitis flow:' lines, want one: {r.stderr!r}")
            if ours:
                expect("missing v++ (not on PATH)" in ours[0] or "missing XILINX_XRT" in ours[0],
                       f"make {target}: message does not name the missing tool: {ours[0]}")
                expect("XILINX_XRT" in ours[0] or target == "xo",
                       f"make {target}: message does not name XILINX_XRT: {ours[0]}")
            expect(not os.path.exists(out_dir), f"make {target} wrote {out_dir} before the environment check")
        # The check itself: one line naming all three.
        r = run([os.path.join(VITIS, "check_env.sh")], env=env)
        expect(r.returncode == 1 and r.stderr.count("\n") == 1 and "v++" in r.stderr and "vivado" in r.stderr
               and "XILINX_XRT (not set)" in r.stderr, f"check_env.sh: exit {r.returncode}, {r.stderr!r}")
        env2 = dict(env, XILINX_XRT="/nonexistent/xrt")
        r = run([os.path.join(VITIS, "check_env.sh"), "xrt"], env=env2)
        expect(r.returncode == 1 and "/nonexistent/xrt is not a directory" in r.stderr,
               f"check_env.sh xrt with a bad XILINX_XRT: exit {r.returncode}, {r.stderr!r}")
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)
    return 0


def spec_offsets():
    """Global and per-core register offsets and counter names from the generated C++ header."""
    text = open(os.path.join(ROOT, "host", "spec", "loom", "spec_gen.h")).read()

    def block(ns):
        body = text.split(f"namespace {ns} {{", 1)[1].split(f"}}  // namespace {ns}", 1)[0]
        return {m.group(1): int(m.group(2), 16)
                for m in re.finditer(r"inline constexpr uint32_t (\w+) = (0x[0-9A-Fa-f]+);", body)}

    base = int(re.search(r"kCoreBase = (0x[0-9A-Fa-f]+)", text).group(1), 16)
    stride = int(re.search(r"kCoreStride = (0x[0-9A-Fa-f]+)", text).group(1), 16)
    bits = int(re.search(r"kCsrAddrBits = (\d+)", text).group(1))
    counters = re.findall(r"^  (\w+) = (\d+),", text.split("enum class Counter", 1)[1].split("};", 1)[0], re.M)
    return block("reg"), block("core_reg"), base, stride, bits, [c for c, _ in counters]


def test_kernel_xml():
    glob_regs, core_regs, core_base, core_stride, addr_bits, counters = spec_offsets()
    for name, cfg in configs().items():
        out = tempfile.mkdtemp(prefix="loom-kxml-")
        try:
            r = run([sys.executable, os.path.join(VITIS, "gen_kernel_xml.py"), name, out])
            expect(r.returncode == 0, f"gen_kernel_xml {name}: exit {r.returncode}: {r.stderr}")
            if r.returncode:
                continue
            kernel = ET.parse(os.path.join(out, "kernel.xml")).getroot().find("kernel")
            top = open(os.path.join(ROOT, "rtl", "generated", f"loom_top_{name}.sv")).read()
            expect(kernel.get("name") == f"loom_top_{name}", f"{name}: kernel name {kernel.get('name')}")
            expect(kernel.get("hwControlProtocol") == "user_managed", f"{name}: not user_managed")
            ports = {p.get("name"): p for p in kernel.find("ports")}
            masters = sorted(n for n in ports if n.startswith("m_axi_"))
            expect(masters == [f"m_axi_gmem{i}" for i in range(cfg["mem_ports"])],
                   f"{name}: masters {masters}, config has {cfg['mem_ports']} ports")
            for m in masters:
                expect(f"{m}_awvalid" in top and f"{m}_rdata" in top, f"{name}: {m} is not a port of the RTL top")
                expect(ports[m].get("dataWidth") == str(cfg["mem_width_bits"]), f"{name}: {m} width")
            expect(f"m_axi_gmem{cfg['mem_ports']}_" not in top, f"{name}: the RTL top has more ports than kernel.xml")
            expect(int(ports["s_axi_control"].get("range"), 16) == 1 << addr_bits, f"{name}: control range")
            expect(f"[{addr_bits - 1}:0]            s_axi_control_awaddr" in top,
                   f"{name}: RTL top's control address is not {addr_bits} bits")
            regs = {}
            tcl = open(os.path.join(out, "regs.tcl")).read()
            for m in re.finditer(r"ipx::add_register (\w+) \$block\]\nset_property address_offset (0x[0-9A-F]+)", tcl):
                regs[m.group(1)] = int(m.group(2), 16)
            for reg, off in glob_regs.items():
                if reg.endswith("_STRIDE"):
                    continue
                expect(regs.get(reg, regs.get(reg + "0")) == off, f"{name}: {reg} at {regs.get(reg)}, spec {off:#x}")
            for c in range(cfg["cores"]):
                for reg, off in core_regs.items():
                    if reg == "COUNTERS":
                        continue
                    want = core_base + c * core_stride + off
                    expect(regs.get(f"CORE{c}_{reg}") == want, f"{name}: CORE{c}_{reg} not at {want:#x}")
                for i, ctr in enumerate(counters):
                    want = core_base + c * core_stride + core_regs["COUNTERS"] + 8 * i
                    expect(regs.get(f"CORE{c}_{ctr}_LO") == want and regs.get(f"CORE{c}_{ctr}_HI") == want + 4,
                           f"{name}: counter CORE{c}_{ctr} not at {want:#x}")
            expect(f"CORE{cfg['cores']}_DOORBELL" not in regs, f"{name}: registers for a core the config lacks")
            taken = {off + b for reg, off in regs.items() if not reg.startswith("gmem") for b in range(4)}
            for arg in kernel.find("args"):
                off = int(arg.get("offset"), 16)
                expect(off + 8 <= core_base, f"{name}: argument {arg.get('name')} at {off:#x} inside the core blocks")
                expect(not any(off + b in taken for b in range(8)),
                       f"{name}: argument {arg.get('name')} at {off:#x} overlaps a register")
        finally:
            shutil.rmtree(out, ignore_errors=True)
    r = run([sys.executable, os.path.join(VITIS, "gen_kernel_xml.py"), "no_such_config", "/tmp/loom-never"])
    expect(r.returncode == 1 and r.stderr.count("\n") == 1 and "no configuration named 'no_such_config'" in r.stderr
           and not os.path.exists("/tmp/loom-never"), f"gen_kernel_xml with a bad config: {r.returncode} {r.stderr!r}")
    return 0


def parse_cfg(path):
    sections, cur = {}, ""
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            cur = line.strip("[]")
            continue
        k, _, v = line.partition("=")
        sections.setdefault(cur, []).append((k.strip(), v.strip()))
    return sections


def test_link_configs():
    cfgs = configs()
    makefile = open(os.path.join(VITIS, "Makefile")).read()
    boards = {"u55c": "HBM", "u280": "HBM", "u250": "DDR", "kv260": "HP"}
    for board, mem in boards.items():
        path = os.path.join(ROOT, "constraints", f"{board}.cfg")
        sec = parse_cfg(path)
        conn = sec.get("connectivity", [])
        nk = [v for k, v in conn if k == "nk"]
        expect(len(nk) == 1, f"{board}.cfg: {len(nk)} nk lines")
        if len(nk) != 1:
            continue
        kname, count, inst = nk[0].split(":")
        cname = kname.removeprefix("loom_top_")
        expect(cname in cfgs, f"{board}.cfg: kernel {kname} is not a configuration's top")
        if cname not in cfgs:
            continue
        cfg = cfgs[cname]
        m = re.search(rf"^CONFIG_{board}\s*:=\s*(\w+)", makefile, re.M)
        expect(m is not None and m.group(1) == cname, f"Makefile CONFIG_{board} is not {cname}")
        sps = [v for k, v in conn if k == "sp"]
        args = sorted(v.split(":")[0] for v in sps)
        expect(args == sorted(f"{inst}.gmem{i}" for i in range(cfg["mem_ports"])),
               f"{board}.cfg: sp= covers {args}, config {cname} has {cfg['mem_ports']} ports")
        expect(all(v.split(":")[1].startswith(mem) for v in sps), f"{board}.cfg: not all ports on {mem}")
        freq = [v for k, v in sec.get("clock", []) if k == "freqHz"]
        expect(freq == [f"{cfg['clock_mhz'] * 1000000}:{inst}"],
               f"{board}.cfg: clock {freq}, config {cname} runs at {cfg['clock_mhz']} MHz")
        if board != "kv260":
            slr = [v for k, v in conn if k == "slr"]
            expect(len(slr) == 1 and slr[0].startswith(inst + ":SLR"), f"{board}.cfg: no slr= for {inst}")
            m = re.search(rf"^SLR_{board}\s*:=\s*(\w+)", makefile, re.M)
            expect(m is not None and slr and slr[0].endswith(":" + m.group(1)),
                   f"{board}: Makefile SLR_{board} differs from the cfg's slr=")
    return 0


FAKE_TOOL = r"""#!/usr/bin/env python3
# Stand-in for an AMD tool in loom's flow test: records its arguments and
# creates the files the next step expects.
import os, shutil, sys
name, args = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a") as log:
    log.write(name + " " + " ".join(args) + "\n")
def arg(flag):
    return args[args.index(flag) + 1] if flag in args else None
if name == "vivado":
    xo = args[-1]
    os.makedirs(os.path.dirname(xo), exist_ok=True)
    open(xo, "w").close()
elif name == "v++" and "--mode" in args:
    log_cwd = os.getcwd()
    with open(os.environ["FAKE_LOG"], "a") as log:
        log.write("cwd " + log_cwd + "\n")
    out = [a.split("=", 1)[1] for a in args if a.startswith("--hls.package.output.file=")][0]
    os.makedirs(os.path.dirname(out), exist_ok=True)
    open(out, "w").close()
elif name == "v++":
    out = arg("-o")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    open(out, "w").close()
    if arg("-t") == "hw":
        impl = os.path.join(arg("--temp_dir"), "link", "vivado", "vpl", "prj", "prj.runs", "impl_1")
        os.makedirs(impl, exist_ok=True)
        shutil.copy(os.environ["FAKE_TIMING_REPORT"], os.path.join(impl, "level0_wrapper_timing_summary_routed.rpt"))
        if os.environ.get("FAKE_PHYSOPT_REPORT"):
            shutil.copy(os.environ["FAKE_PHYSOPT_REPORT"],
                        os.path.join(impl, "level0_wrapper_timing_summary_postroute_physopted.rpt"))
elif name == "emconfigutil":
    od = arg("--od")
    os.makedirs(od, exist_ok=True)
    open(os.path.join(od, "emconfig.json"), "w").close()
"""


def test_make_flow():
    work = tempfile.mkdtemp(prefix="loom-vitis-flow-")
    try:
        bindir = os.path.join(work, "bin")
        os.makedirs(bindir)
        for tool in ("v++", "vivado", "emconfigutil"):
            path = os.path.join(bindir, tool)
            with open(path, "w") as f:
                f.write(FAKE_TOOL)
            os.chmod(path, 0o755)
        os.makedirs(os.path.join(work, "xrt"))
        log = os.path.join(work, "tools.log")
        env = dict(os.environ, PATH=bindir + ":/usr/bin:/bin", XILINX_XRT=os.path.join(work, "xrt"), FAKE_LOG=log)

        def make(*targs, report="timing_met.rpt", physopt=""):
            if os.path.exists(log):
                os.remove(log)
            e = dict(env, FAKE_TIMING_REPORT=os.path.join(DATA, report),
                     FAKE_PHYSOPT_REPORT=os.path.join(DATA, physopt) if physopt else "")
            r = run(["make", "--no-print-directory", "-C", VITIS] + list(targs), env=e)
            calls = open(log).read().splitlines() if os.path.exists(log) else []
            return r, calls

        out = os.path.join(work, "u55c")
        r, calls = make("xclbin", "TARGET=hw", f"OUT={out}")
        expect(r.returncode == 0, f"xclbin hw with a met report: exit {r.returncode}: {r.stderr}")
        expect(re.search(r"timing: .*level0_wrapper_timing_summary_routed\.rpt: WNS 0\.087 ns, WHS 0\.010 ns: met",
                         r.stdout) is not None, f"xclbin hw: no timing line in {r.stdout!r}")
        viv = [c for c in calls if c.startswith("vivado ")]
        vpp = [c for c in calls if c.startswith("v++ ")]
        gen = os.path.join(out, "gen")
        xo = os.path.join(out, "loom_top_default.xo")
        expect(len(viv) == 1 and viv[0].endswith(
            f"-source {VITIS}/package_kernel.tcl -tclargs default xcu55c-fsvh2892-2L-e {gen} {xo}"),
            f"vivado call: {viv}")
        expect(os.path.exists(os.path.join(gen, "kernel.xml")) and os.path.exists(os.path.join(gen, "regs.tcl")),
               "xo: kernel.xml / regs.tcl not generated before packaging")
        want = (f"v++ -l -t hw --platform xilinx_u55c_gen3x16_xdma_3_202210_1 --config {ROOT}/constraints/u55c.cfg "
                f"--vivado.prop run.impl_1.STEPS.OPT_DESIGN.TCL.PRE={ROOT}/constraints/slr_pblock.tcl "
                f"--temp_dir {out}/hw/_x -o {out}/hw/loom_default.xclbin {xo}")
        expect(vpp == [want], f"v++ call: {vpp}, want [{want}]")

        r, calls = make("xclbin", "TARGET=hw", f"OUT={out}", report="timing_setup_violated.rpt")
        ours = [l for l in r.stderr.splitlines() if "negative setup slack" in l]
        expect(r.returncode != 0 and len(ours) == 1, f"xclbin hw with negative WNS: exit {r.returncode}: {r.stderr!r}")

        # After post-route phys_opt its report is the final one.
        r, calls = make("xclbin", "TARGET=hw", f"OUT={out}", physopt="timing_hold_violated.rpt")
        expect(r.returncode != 0 and "postroute_physopted.rpt: WHS -0.034 ns" in r.stderr,
               f"xclbin hw with a violated post-route phys_opt report: exit {r.returncode}: {r.stderr!r}")

        r, calls = make("xclbin", "BOARD=u250", "TARGET=hw_emu", f"OUT={work}/u250")
        vpp = [c for c in calls if c.startswith("v++ ")]
        expect(r.returncode == 0 and len(vpp) == 1 and "-t hw_emu" in vpp[0] and "constraints/u250.cfg" in vpp[0]
               and "xilinx_u250_gen3x16_xdma_4_1_202210_1" in vpp[0] and "timing:" not in r.stdout,
               f"xclbin u250 hw_emu: exit {r.returncode}, calls {calls}")
        viv = [c for c in calls if c.startswith("vivado ")]
        expect(len(viv) == 1 and "-tclargs default xcu250-figd2104-2L-e" in viv[0], f"u250 vivado call: {viv}")

        # HLS kernels linked beside the RTL kernel.
        hout = f"{work}/u250-hls"
        r, calls = make("xclbin", "BOARD=u250", "TARGET=hw_emu", "HLS_KERNELS=gemm eltwise", f"OUT={hout}")
        hls_calls = [c for c in calls if c.startswith("v++ -c --mode hls")]
        cwds = [c for c in calls if c.startswith("cwd ")]
        expect(r.returncode == 0 and len(hls_calls) == 2, f"xclbin with HLS kernels: exit {r.returncode}, {calls}")
        for k, call, cwd in zip(("gemm", "eltwise"), hls_calls, cwds):
            expect(call == f"v++ -c --mode hls --config hls_config.cfg --part xcu250-figd2104-2L-e --work_dir "
                   f"{hout}/hls/vitis_{k} --hls.package.output.file={hout}/hls/loom_hls_{k}.xo"
                   and cwd == f"cwd {ROOT}/hls/{k}", f"HLS export of {k}: {call} in {cwd}")
        link = [c for c in calls if c.startswith("v++ -l")]
        want_link = ("--connectivity.nk loom_hls_gemm:1:loom_hls_gemm_1 --connectivity.sp loom_hls_gemm_1.a:DDR[1] "
                     "--connectivity.sp loom_hls_gemm_1.b:DDR[1] --connectivity.sp loom_hls_gemm_1.params:DDR[1] "
                     "--connectivity.sp loom_hls_gemm_1.y:DDR[1] --connectivity.nk loom_hls_eltwise:1:loom_hls_eltwise_1 "
                     "--connectivity.sp loom_hls_eltwise_1.a:DDR[1] --connectivity.sp loom_hls_eltwise_1.b:DDR[1] "
                     "--connectivity.sp loom_hls_eltwise_1.y:DDR[1]")
        expect(len(link) == 1 and want_link in link[0] and link[0].endswith(
            f"{hout}/loom_top_default.xo {hout}/hls/loom_hls_gemm.xo {hout}/hls/loom_hls_eltwise.xo"),
            f"link with HLS kernels: {link}")

        r, calls = make("emconfig", f"OUT={out}")
        expect(r.returncode == 0 and os.path.exists(os.path.join(out, "hw_emu", "emconfig.json")) and
               calls == [f"emconfigutil --platform xilinx_u55c_gen3x16_xdma_3_202210_1 --od {out}/hw_emu"],
               f"emconfig: exit {r.returncode}, calls {calls}")

        r, calls = make("xo", "BOARD=kv260", f"OUT={work}/kv260")
        expect(r.returncode == 0 and len(calls) == 1 and "-tclargs tiny xck26-sfvc784-2LV-c" in calls[0],
               f"xo kv260: exit {r.returncode}, calls {calls}")

        bad = [
            (["xclbin", "BOARD=kv260"], "no default platform for BOARD 'kv260'"),
            (["xclbin", "BOARD=vck5000"], "unknown BOARD 'vck5000'"),
            (["xclbin", "TARGET=sw_emu"], "TARGET 'sw_emu' must be hw or hw_emu"),
            (["xo", "CONFIG=huge"], "no RTL kernel top rtl/generated/loom_top_huge.sv"),
            (["run", f"LOOM={work}/no-loom"], f"{work}/no-loom not built"),
            (["timing"], "give REPORT="),
            (["xclbin", "HLS_KERNELS=gemm fft"], "unknown HLS kernel 'fft'"),
            (["hls-xo"], "give HLS_KERNELS="),
        ]
        for targs, msg in bad:
            r, calls = make(*targs, f"OUT={work}/bad")
            ours = [l for l in r.stderr.splitlines() if l.startswith("loom vitis flow:")]
            expect(r.returncode != 0 and len(ours) == 1 and msg in ours[0] and calls == [],
                   f"make {' '.join(targs)}: exit {r.returncode}, calls {calls}, stderr {r.stderr!r}")
            expect(not os.path.exists(f"{work}/bad"), f"make {' '.join(targs)} wrote its output directory")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def test_package_tcl():
    tclsh = shutil.which("tclsh")
    if not tclsh:
        print("tclsh not installed: package_kernel.tcl cannot be run here")
        return SKIP
    mock = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mock_vivado.tcl")
    filelist = [l.strip() for l in open(os.path.join(ROOT, "rtl", "filelist.f"))
                if l.strip() and not l.startswith(("//", "+incdir+"))]
    for name, cfg in configs().items():
        work = tempfile.mkdtemp(prefix="loom-pkg-")
        try:
            gen, xo, log = os.path.join(work, "gen"), os.path.join(work, f"loom_top_{name}.xo"), os.path.join(work, "log")
            r = run([sys.executable, os.path.join(VITIS, "gen_kernel_xml.py"), name, gen])
            expect(r.returncode == 0, f"{name}: gen_kernel_xml: {r.stderr}")
            top_sv = os.path.join(ROOT, "rtl", "generated", f"loom_top_{name}.sv")
            r = run([tclsh, mock, os.path.join(VITIS, "package_kernel.tcl"), log, top_sv, name, "xcu55c-fsvh2892-2L-e",
                     gen, xo])
            expect(r.returncode == 0, f"{name}: package_kernel.tcl exit {r.returncode}: {r.stderr.strip()}")
            calls = open(log).read().splitlines() if os.path.exists(log) else []
            added = {c.split()[-1] for c in calls if c.startswith("add_files")}
            for f in filelist + [f"rtl/generated/loom_top_{name}.sv"]:
                expect(os.path.join(ROOT, f) in added, f"{name}: {f} not added to the project")
            expect(f"set_property top loom_top_{name} sources_1" in calls, f"{name}: top not set")
            assoc = [c for c in calls if c.startswith("ipx::associate_bus_interfaces -busif")]
            want = ["s_axi_control"] + [f"m_axi_gmem{i}" for i in range(cfg["mem_ports"])]
            expect(sorted(c.split()[2] for c in assoc) == sorted(want) and all("-clock ap_clk" in c for c in assoc),
                   f"{name}: bus interfaces associated: {assoc}")
            expect("ipx::associate_bus_interfaces -clock ap_clk -reset ap_rst_n core" in calls, f"{name}: reset")
            expect("ipx::add_bus_parameter SENSITIVITY interrupt" in calls, f"{name}: interrupt sensitivity")
            regs = [c.split()[1] for c in calls if c.startswith("ipx::add_register ")]
            n_tcl = open(os.path.join(gen, "regs.tcl")).read().count("ipx::add_register ")
            expect(len(regs) == n_tcl and "ID" in regs and "CORE0_DOORBELL" in regs and "gmem0" in regs,
                   f"{name}: {len(regs)} registers added, regs.tcl has {n_tcl}")
            expect(f"package_xo -force -xo_path {xo} -kernel_name loom_top_{name} -ip_directory {gen}/ip "
                   f"-kernel_xml {gen}/kernel.xml" in calls, f"{name}: package_xo call: "
                   f"{[c for c in calls if c.startswith('package_xo')]}")
            expect(any(c.startswith("ipx::check_integrity -kernel") for c in calls), f"{name}: no integrity check")
            os.remove(os.path.join(gen, "kernel.xml"))
            r = run([tclsh, mock, os.path.join(VITIS, "package_kernel.tcl"), log, top_sv, name, "p", gen, xo])
            expect(r.returncode == 1 and "kernel.xml does not exist" in r.stderr,
                   f"{name}: without kernel.xml: exit {r.returncode}, {r.stderr!r}")
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


def main():
    tests = {"timing": test_timing, "env": test_env, "kernel_xml": test_kernel_xml, "link_configs": test_link_configs,
             "make_flow": test_make_flow, "package_tcl": test_package_tcl}
    if len(sys.argv) != 2 or sys.argv[1] not in tests:
        print("usage: test_vitis_flow.py " + "|".join(tests), file=sys.stderr)
        return 2
    rc = tests[sys.argv[1]]() or 0
    if rc == SKIP:
        return SKIP
    print(f"vitis.{sys.argv[1]}: {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
