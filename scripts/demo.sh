#!/usr/bin/env bash
# Sets everything up, builds, and runs the demo: the bundled demo CNN compiled
# for every named configuration, run on the golden model (`ref`), the SystemC/TLM
# virtual platform (`tlm`) and the
# Verilated RTL fabric (`rtl`, for each configuration verilated into this
# build: `tiny` by default), each checked bit for bit against the direct
# reference.
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
  # On tiny also `xrt-emu`: the xrt backend's XRT call sequence on its emulation over the RTL.
  for backend in ref tlm rtl $([ "$cfg" = tiny ] && echo xrt-emu); do
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
