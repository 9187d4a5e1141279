#!/usr/bin/env bash
# RTL coverage run behind `scripts/regress.sh --coverage` (which checks the
# arguments and calls this): build the coverage build, run its rtl tests and
# the regression list on the rtl backend with LOOM_COVERAGE_DIR set, merge the
# .dat files, write LCOV and HTML, print the per-module table (docs/coverage.md).
#
#   scripts/coverage.sh ROOT BUILD OUT JOBS TAG [--check]
set -euo pipefail
die() { echo "loom: error: regress: $*" >&2; exit 1; }
[ $# -ge 5 ] || die "coverage.sh: expected ROOT BUILD OUT JOBS TAG [--check] (run scripts/regress.sh --coverage)"
root=$1 build=$2 out=$3 jobs=$4 tag=${5:-all} check=${6:-}
for t in verilator_coverage genhtml cmake ctest; do
  command -v "$t" >/dev/null 2>&1 || die "$t not found (scripts/setup.sh installs it)"
done
mkdir -p "$out" || die "$out: cannot create the output directory"
out=$(cd "$out" && pwd)
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/loom-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$root}

if [ ! -f "$build/build.ninja" ]; then
  [ "$build" = "$root/build/coverage" ] ||
    die "--build $build is not configured (cmake -S $root -B $build -G Ninja -DLOOM_RTL_COVERAGE=ON)"
  (cd "$root" && cmake --preset coverage >"$out/configure.log" 2>&1) ||
    die "cmake --preset coverage failed (log: $out/configure.log)"
fi
grep -q '^LOOM_RTL_COVERAGE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null ||
  die "--build $build is not a coverage build (configure it with -DLOOM_RTL_COVERAGE=ON)"
start=$(date +%s)
echo "coverage: building $build (log: $out/build.log)"
cmake --build "$build" -j "$jobs" >"$out/build.log" 2>&1 || die "build failed (log: $out/build.log)"

rm -rf "$out/dat" "$out/regress" "$out/html"
mkdir -p "$out/dat"
export LOOM_COVERAGE_DIR="$out/dat"
failed=""
echo "coverage: rtl tests (log: $out/ctest.log)"
# The e2e entries are the regression list, run below through regress.sh.
ctest --test-dir "$build" -L rtl -LE 'slow|e2e' -E '^rtl_(lint|synth)' -j "$jobs" --output-on-failure \
  >"$out/ctest.log" 2>&1 || failed="rtl tests (see $out/ctest.log)"
grep -E '^[0-9]+% tests passed' "$out/ctest.log" || true
echo "coverage: regression list on rtl (log: $out/regress.log)"
bash "$root/scripts/regress.sh" --backend rtl --tag "$tag" --loom "$build/bin/loom" -j "$jobs" \
  -o "$out/regress" >"$out/regress.log" 2>&1 || failed="${failed:+$failed, }regression list (see $out/regress.log)"
tail -n 1 "$out/regress.log" || true

shopt -s nullglob
dats=("$out"/dat/*.dat)
[ ${#dats[@]} -gt 0 ] || die "no coverage files in $out/dat: is $build a coverage build?"
echo "coverage: merging ${#dats[@]} files"
verilator_coverage --write "$out/merged.dat" "${dats[@]}" >"$out/merge.log" 2>&1 ||
  die "verilator_coverage could not merge (log: $out/merge.log)"
rm -rf "$out/dat"
verilator_coverage --write-info "$out/coverage.info" "$out/merged.dat" >>"$out/merge.log" 2>&1 ||
  die "verilator_coverage --write-info failed (log: $out/merge.log)"
genhtml -q --output-directory "$out/html" "$out/coverage.info" >"$out/genhtml.log" 2>&1 ||
  die "genhtml failed (log: $out/genhtml.log)"
echo "coverage: LCOV $out/coverage.info, HTML $out/html/index.html, $(( $(date +%s) - start )) s"

rc=0
python3 "$root/scripts/coverage_report.py" "$out/merged.dat" --table "$out/table.md" $check || rc=$?
[ -z "$failed" ] || die "failed: $failed (coverage above is from every run, passing or not)"
exit $rc
