#!/usr/bin/env python3
"""The xrt backends and `loom bringup` as a user runs them.

usage: xrt_cli_test.py LOOM ROOT CASE
"""
import json
import os
import subprocess
import sys
import tempfile

LOOM, ROOT, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
CHECKS = ["device opened", "xclbin loaded", "identity registers", "scratch register", "dma loopback",
          "smoke gemm", "counters", "window violation", "interrupt", "hls units"]


def run(args, env=None, timeout=600):
    e = dict(os.environ)
    for k in ("LOOM_XRT_EMU_FAULT", "LOOM_XCLBIN", "LOOM_XRT_DEVICE", "LOOM_XRT_EMU_DEVICES", "LOOM_XRT_TIMEOUT_MS"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([LOOM] + args, capture_output=True, text=True, env=e, timeout=timeout)


def expect(cond, msg):
    if not cond:
        print("FAIL:", msg)
        sys.exit(1)


def bringup_json(env=None, extra=()):
    r = run(["bringup", "--backend", "xrt-emu", "--config", "tiny", "--json", *extra], env)
    try:
        j = json.loads(r.stdout)
    except json.JSONDecodeError:
        expect(False, "bringup --json printed no JSON: %r %r" % (r.stdout[-500:], r.stderr[-500:]))
    expect([c["name"] for c in j["checks"]] == CHECKS, "check order: %s" % [c["name"] for c in j["checks"]])
    return r, {c["name"]: c for c in j["checks"]}, j


def one_line_error(r, *needles):
    expect(r.returncode != 0, "exit code 0 for a failing command")
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    expect(len(lines) == 1, "expected one line on stderr, got %r" % r.stderr)
    for n in needles:
        expect(n in lines[0], "%r not in %r" % (n, lines[0]))


def plan(tmp, cfg="tiny", hls=False):
    # With --hls auto: the stem conv, whose output rows the compiler splits
    # between the cores and the conv unit (the demo's layers all run faster
    # on the cores).
    p = os.path.join(tmp, "%s.%s.plan" % ("hetero_stem" if hls else "demo", cfg))
    graph = "examples/hetero_stem.json" if hls else "examples/demo_cnn.json"
    r = run(["compile", os.path.join(ROOT, graph), "--config", cfg, "-o", p, "--json"] +
            (["--hls", "auto"] if hls else []))
    expect(r.returncode == 0, "compile failed: " + r.stderr)
    if hls:
        calls = json.loads(r.stdout).get("unit_calls", 0)
        expect(calls >= 1, "hetero_stem compiled with --hls auto has no HLS unit call: %s" % r.stdout[:400])
    return p


def case_bringup_emu_passes():
    r, checks, j = bringup_json()
    bad = {n: c for n, c in checks.items() if c["result"] != "pass"}
    expect(r.returncode == 0 and not bad and j["ok"], "bringup on xrt-emu: %s %s" % (bad, r.stderr))
    dma = checks["dma loopback"]["values"]
    sizes = [4096 << (2 * i) for i in range(8)]  # 4 KiB .. 64 MiB
    expect(sorted(dma) == sorted(["h2d_MBps_%d" % n for n in sizes] + ["d2h_MBps_%d" % n for n in sizes]),
           "dma sizes: %s" % sorted(dma))
    expect(all(v > 0 for v in dma.values()), "dma bandwidths: %s" % dma)
    expect(checks["xclbin loaded"]["detail"].startswith("uuid "), checks["xclbin loaded"]["detail"])
    hls = checks["hls units"]["detail"]
    for k in ("gemm", "conv", "pool", "eltwise"):
        expect("loom_hls_%s:{loom_hls_%s_1}" % (k, k) in hls, "hls units: %s" % hls)
    # The text form: one line per check, in order.
    t = run(["bringup", "--backend", "xrt-emu", "--config", "tiny", "--dma-max-mib", "1"])
    expect(t.returncode == 0, t.stdout + t.stderr)
    got = [l.split(":")[0] for l in t.stdout.splitlines()[1:-1]]
    expect(got == CHECKS, "text lines: %s" % got)


def case_bringup_xrt_no_device():
    r = run(["bringup", "--backend", "xrt", "--config", "tiny"])
    expect(r.returncode != 0, "bringup on xrt without a card exited 0")
    lines = r.stdout.splitlines()
    expect(any(l.startswith("device opened: fail (no device") for l in lines), r.stdout)
    for name in CHECKS[1:]:
        expect(any(l.startswith(name + ": skip") for l in lines), "%s not skipped: %s" % (name, r.stdout))


def case_bringup_fault_id():
    r, checks, _ = bringup_json({"LOOM_XRT_EMU_FAULT": "id"}, ["--dma-max-mib", "1"])
    expect(r.returncode != 0, "a corrupted ID register passed bringup")
    failed = [n for n, c in checks.items() if c["result"] == "fail"]
    expect(failed == ["identity registers"], "failed checks: %s" % failed)
    expect("ID reads" in checks["identity registers"]["detail"], checks["identity registers"]["detail"])
    for n in CHECKS[:2]:
        expect(checks[n]["result"] == "pass", n)


def case_bringup_fault_irq():
    r, checks, _ = bringup_json({"LOOM_XRT_EMU_FAULT": "irq"}, ["--dma-max-mib", "1"])
    expect(r.returncode != 0, "a lost interrupt passed bringup")
    failed = [n for n, c in checks.items() if c["result"] == "fail"]
    expect(failed == ["interrupt"], "failed checks: %s" % failed)
    expect("the host never saw it" in checks["interrupt"]["detail"], checks["interrupt"]["detail"])


def rtl_only_xclbin(tmp):
    x = os.path.join(tmp, "rtl_only.xclbin")
    with open(os.path.join(ROOT, "host/backends/xrt/emu/xclbin/loom_tiny.xclbin")) as f:
        lines = [l for l in f if not l.startswith("ip: loom_hls_")]
    with open(x, "w") as f:
        f.writelines(lines)
    return x


def case_bringup_hls_units():
    # Without HLS units in the xclbin the check is skipped with its reason.
    with tempfile.TemporaryDirectory() as tmp:
        r, checks, j = bringup_json(extra=["--dma-max-mib", "1", "--xclbin", rtl_only_xclbin(tmp)])
        expect(r.returncode == 0 and j["ok"], "bringup without HLS units: %s" % r.stdout[-600:])
        expect(checks["hls units"]["result"] == "skip" and "no HLS compute units" in checks["hls units"]["detail"],
               checks["hls units"])
    # A unit that never completes fails that check only, naming the unit.
    r, checks, _ = bringup_json({"LOOM_XRT_EMU_FAULT": "unit-hang", "LOOM_XRT_TIMEOUT_MS": "2000"},
                                ["--dma-max-mib", "1"])
    expect(r.returncode != 0, "a hung HLS unit passed bringup")
    failed = [n for n, c in checks.items() if c["result"] == "fail"]
    expect(failed == ["hls units"], "failed checks: %s" % failed)
    expect("did not complete within 2000 ms" in checks["hls units"]["detail"], checks["hls units"]["detail"])


def case_run_xrt_no_device():
    with tempfile.TemporaryDirectory() as tmp:
        r = run(["run", plan(tmp), "--backend", "xrt"])
        one_line_error(r, "no device")
        # A plan with HLS unit calls: the same answer.
        r = run(["run", plan(tmp, hls=True), "--backend", "xrt"])
        one_line_error(r, "no device")


def case_run_emu_hls_bit_exact():
    # The demo with conv layers on the HLS units: xrt::kernel / xrt::run on the
    # emulation, bit-exact with the direct reference and with ref.
    with tempfile.TemporaryDirectory() as tmp:
        p = plan(tmp, hls=True)
        out = {}
        for b in ("xrt-emu", "ref"):
            d = os.path.join(tmp, b)
            r = run(["run", p, "--backend", b, "--check", "--json", "--outputs", d])
            expect(r.returncode == 0, "%s: %s" % (b, r.stderr))
            j = json.loads(r.stdout)
            expect(j["bit_exact"] is True and j["backend"] == b, "%s not bit-exact: %s" % (b, r.stdout[:400]))
            out[b] = {f: open(os.path.join(d, f), "rb").read() for f in sorted(os.listdir(d))}
        expect(out["xrt-emu"] and out["xrt-emu"] == out["ref"], "xrt-emu and ref outputs differ")


def case_run_emu_hls_unit_hangs():
    # A compute unit that never completes: its run is aborted and named, one line.
    with tempfile.TemporaryDirectory() as tmp:
        r = run(["run", plan(tmp, hls=True), "--backend", "xrt-emu"],
                {"LOOM_XRT_EMU_FAULT": "unit-hang", "LOOM_XRT_TIMEOUT_MS": "3000"})
        one_line_error(r, "compute unit loom_hls_", "did not complete within 3000 ms", "aborted")


def case_run_emu_hls_xclbin_without_units():
    # An xclbin linked without the HLS kernels: the unit call says what is missing.
    with tempfile.TemporaryDirectory() as tmp:
        x = rtl_only_xclbin(tmp)
        r = run(["run", plan(tmp, hls=True), "--backend", "xrt-emu"], {"LOOM_XCLBIN": x})
        one_line_error(r, "compute unit loom_hls_", "not in xclbin", "HLS_KERNELS")
        # The same xclbin runs a plan without unit calls.
        r = run(["run", plan(tmp), "--backend", "xrt-emu", "--check", "--json"], {"LOOM_XCLBIN": x})
        expect(r.returncode == 0 and json.loads(r.stdout)["bit_exact"] is True, r.stderr)


def case_run_emu_bit_exact():
    with tempfile.TemporaryDirectory() as tmp:
        r = run(["run", plan(tmp), "--backend", "xrt-emu", "--check", "--json"])
        expect(r.returncode == 0, r.stderr)
        j = json.loads(r.stdout)
        expect(j["bit_exact"] is True and j["backend"] == "xrt-emu", "not bit-exact: %s" % r.stdout[:400])


def case_emu_malformed_xclbin():
    with tempfile.TemporaryDirectory() as tmp:
        p = plan(tmp)
        bad = os.path.join(tmp, "bad.xclbin")
        with open(bad, "w") as f:
            f.write("format: loom-emu-xclbin 1\nconfig: tiny\nip loom_top\n")
        r = run(["run", p, "--backend", "xrt-emu"], {"LOOM_XCLBIN": bad})
        one_line_error(r, "bad.xclbin", "line 3")
        with open(bad, "wb") as f:
            f.write(b"xclbin2\0\0\0\x01\x02")
        r = run(["run", p, "--backend", "xrt-emu"], {"LOOM_XCLBIN": bad})
        one_line_error(r, "bad.xclbin", "not an emulated xclbin")
        r = run(["run", p, "--backend", "xrt-emu"], {"LOOM_XCLBIN": os.path.join(tmp, "missing.xclbin")})
        one_line_error(r, "missing.xclbin", "cannot open")
        # Special files are refused without blocking; the flag works as the variable does.
        fifo = os.path.join(tmp, "fifo.xclbin")
        os.mkfifo(fifo)
        r = run(["run", p, "--backend", "xrt-emu", "--xclbin", fifo])
        one_line_error(r, "fifo.xclbin", "not a regular file")
        r = run(["run", p, "--backend", "xrt-emu", "--xclbin", "/dev/zero"])
        one_line_error(r, "/dev/zero", "not a regular file")
        # A tiny bitstream under a plan for small: HWCFG does not match.
        r = run(["run", plan(tmp, "small"), "--backend", "xrt-emu"],
                {"LOOM_XCLBIN": os.path.join(ROOT, "host/backends/xrt/emu/xclbin/loom_tiny.xclbin")})
        one_line_error(r, "HWCFG", "is not configuration 'small'")
        r = run(["run", p, "--backend", "xrt-emu"], {"LOOM_XRT_DEVICE": "3"})
        one_line_error(r, "no device with index 3")



def case_run_emu_timeout_resets():
    # A run that cannot finish in time is aborted with SOFT_RESET and named.
    with tempfile.TemporaryDirectory() as tmp:
        r = run(["run", plan(tmp), "--backend", "xrt-emu"], {"LOOM_XRT_TIMEOUT_MS": "1", "LOOM_XRT_EMU_FREE_RUN": "0"})
        one_line_error(r, "did not complete within 1 ms", "were reset")



def case_bringup_config_from_hwcfg():
    tiny = os.path.join(ROOT, "host/backends/xrt/emu/xclbin/loom_tiny.xclbin")
    # No --config: the card's HWCFG names it.
    r = run(["bringup", "--backend", "xrt-emu", "--xclbin", tiny, "--dma-max-mib", "1", "--json"])
    j = json.loads(r.stdout)
    expect(r.returncode == 0 and j["config"] == "tiny" and j["ok"], r.stdout[:600])
    # A --config the xclbin does not implement: the identity check says so, the rest is skipped.
    r = run(["bringup", "--backend", "xrt-emu", "--xclbin", tiny, "--config", "small", "--json"])
    j = json.loads(r.stdout)
    res = {c["name"]: c for c in j["checks"]}
    expect(r.returncode != 0 and res["identity registers"]["result"] == "fail", r.stdout[:600])
    expect("configuration 'small'" in res["identity registers"]["detail"], res["identity registers"]["detail"])
    expect(all(res[n]["result"] == "skip" for n in CHECKS[3:]), r.stdout[:900])


globals()["case_" + CASE]()
print("PASS", CASE)
