#!/usr/bin/env bash
# Sets everything up, builds, and runs the demo: the bundled demo CNN compiled
# for every named configuration and run on the simulated default backend with
# a bit-exact check against the direct reference.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh ci
LOOM=build/ci/bin/loom
BACKEND=${LOOM_BACKEND:-ref}
OUT=build/demo
mkdir -p "$OUT"
"$LOOM" info
for cfg in tiny small default; do
  echo
  echo "== demo_cnn on config '$cfg', backend '$BACKEND' =="
  "$LOOM" compile examples/demo_cnn.json --config "$cfg" -o "$OUT/demo_cnn.$cfg.plan"
  "$LOOM" run "$OUT/demo_cnn.$cfg.plan" --backend "$BACKEND" --check --outputs "$OUT/$cfg" --json > "$OUT/run.$cfg.json"
  python3 - "$OUT/run.$cfg.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("bit_exact: %s  instructions: %d  cores: %d  outputs: %s" % (
    str(r["bit_exact"]).lower(), r["instructions"], len(r["cores"]),
    ", ".join("%s%s -> %s" % (o["name"], o["shape"], o.get("file", "")) for o in r["outputs"])))
sys.exit(0 if r["bit_exact"] else 1)
PY
done
