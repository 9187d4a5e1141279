#!/usr/bin/env bash
# Sets everything up, builds, and runs the demo:
#  1. the bundled demo CNN compiled for every named configuration and run on
#     the golden model (`ref`), the SystemC/TLM virtual platform (`tlm`, with a
#     per-core Perfetto trace), the Verilated RTL (`rtl`), the RTL inside the
#     SystemC platform (`cosim`) — for each configuration verilated into this
#     build: `tiny` and `small` — and on `tiny` the XRT emulation (`xrt-emu`),
#     each checked bit for bit against the direct reference;
#  2. a zoo network: MobileNetV2's stem and three inverted residuals, quantized
#     by ONNX Runtime, imported, compiled for `tiny`, run on `tlm` with --check
#     and compared with ONNX Runtime.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh ci
LOOM=build/ci/bin/loom
OUT=build/demo
mkdir -p "$OUT"
"$LOOM" info
summary() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("  %-4s bit_exact: %s  instructions: %d  cores: %d  cycles: %s  outputs: %s" % (
    r["backend"], str(r["bit_exact"]).lower(), r["instructions"], len(r["cores"]), r["cycles"] if r["cycles"] is not None else "-",
    ", ".join("%s%s" % (o["name"], o["shape"]) for o in r["outputs"])))
sys.exit(0 if r["bit_exact"] else 1)
PY
}
for cfg in tiny small default; do
  echo
  echo "== demo_cnn on config '$cfg' =="
  plan="$OUT/demo_cnn.$cfg.plan"
  "$LOOM" compile examples/demo_cnn.json --config "$cfg" -o "$plan"
  "$LOOM" run "$plan" --backend tlm --trace "$OUT/demo_cnn.$cfg.trace.json" > /dev/null
  echo "  per-core timeline on tlm: $OUT/demo_cnn.$cfg.trace.json (open in https://ui.perfetto.dev)"
  # On tiny also `xrt-emu`: the xrt backend's XRT call sequence on its emulation over the RTL.
  for backend in ref tlm rtl cosim $([ "$cfg" = tiny ] && echo xrt-emu); do
    if ! "$LOOM" run "$plan" --backend "$backend" --check --outputs "$OUT/$cfg.$backend" --json \
        > "$OUT/run.$cfg.$backend.json" 2> "$OUT/run.$cfg.$backend.err"; then
      if grep -q "not verilated into this build" "$OUT/run.$cfg.$backend.err"; then
        echo "  $backend: config '$cfg' not verilated into this build (cmake -DLOOM_RTL_CONFIGS=\"tiny;small;default\")"
        continue
      fi
      cat "$OUT/run.$cfg.$backend.err" >&2
      exit 1
    fi
    summary "$OUT/run.$cfg.$backend.json"
  done
done

echo
echo "== zoo: MobileNetV2 stem + 3 inverted residuals (ONNX Runtime QDQ) on config 'tiny' =="
Z="$OUT/mnv2_block"
"$LOOM" zoo build mobilenetv2 --slice block -o "$Z"
"$LOOM" compile "$Z/model.onnx" --config tiny -o "$OUT/mnv2_block.plan"
"$LOOM" run "$Z/model.onnx" --config tiny --backend tlm --check --json \
  --inputs "$Z/test_data_set_0/input_0.pb" --outputs "$OUT/mnv2_block.out" > "$OUT/run.mnv2_block.tlm.json"
python3 - "$OUT/run.mnv2_block.tlm.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("  %s bit_exact: %s  device ops: %d in %d segment(s)  host fallback ops: %s  instructions: %d  cycles: %d" % (
    r["backend"], str(r["bit_exact"]).lower(), r["device_ops"], len(r["segments"]),
    ", ".join(str(o) for o in r["fallback_ops"]) or "none", r["instructions"], r["cycles"]))
sys.exit(0 if r["bit_exact"] else 1)
PY
python3 scripts/ort_peer.py --models mobilenetv2/block --backends tlm --config tiny --loom "$LOOM" --work "$OUT/peer"
