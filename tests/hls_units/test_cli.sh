#!/usr/bin/env bash
# loom compile --hls: a plan with unit calls is bit-exact on ref and tlm; a
# bad --hls value and a unit plan on a backend without units (rtl, when
# verilated for tiny) are one-line errors with a non-zero exit.
set -u
root=$1
rtl_configs=${2:-}
rtl_configs=${rtl_configs//;/,}
L=${LOOM:?}
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$L" compile "$root/examples/hetero_stem.json" --config tiny -o "$d/h.plan" --hls auto --json >"$d/c.json" ||
  fail "compile --hls auto"
grep -q '"unit_calls": [1-9]' "$d/c.json" || fail "no unit call in the hetero_stem plan on tiny: $(cat "$d/c.json")"
for b in ref tlm; do
  "$L" run "$d/h.plan" --backend $b --check --json >"$d/$b.json" 2>"$d/$b.err" || fail "run on $b: $(cat "$d/$b.err")"
  grep -q '"bit_exact": true' "$d/$b.json" || fail "$b not bit-exact"
done

if "$L" compile "$root/examples/demo_cnn.json" --config tiny -o "$d/x.plan" --hls foo 2>"$d/foo.err"; then
  fail "--hls foo accepted"
fi
[ "$(wc -l <"$d/foo.err")" -eq 1 ] || fail "--hls foo: expected one line, got: $(cat "$d/foo.err")"
grep -q -- "--hls" "$d/foo.err" || fail "--hls foo: message does not name the flag: $(cat "$d/foo.err")"
[ ! -e "$d/x.plan" ] || fail "--hls foo wrote a plan"

case ",$rtl_configs," in
  *,tiny,*)
    if "$L" run "$d/h.plan" --backend rtl 2>"$d/rtl.err" >/dev/null; then fail "unit plan ran on rtl"; fi
    [ "$(wc -l <"$d/rtl.err")" -eq 1 ] || fail "rtl: expected one line, got: $(cat "$d/rtl.err")"
    grep -q "no HLS units" "$d/rtl.err" || fail "rtl: $(cat "$d/rtl.err")"
    ;;
  *) echo "rtl not verilated for tiny: the backend-without-units check is skipped" ;;
esac
echo "ok"
