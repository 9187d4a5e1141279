#!/usr/bin/env bash
# The regression list (tests/e2e/regression.yaml) on any backend through the
# launcher of `loom experiment`: local processes or one Slurm job array, with
# stdout/stderr per entry, resume (entries that passed are not run again) and
# results.csv / results.json (exit code and seconds per entry, runs per hour).
#
#   scripts/regress.sh [--backend ref,tlm,rtl,...] [--tag fast|nightly|all]
#                      [--launcher local|slurm] [--wait] [-j N]
#                      [--loom BIN] [-o DIR]
#
# Defaults: --backend ref, --tag fast, --launcher local, -j $(nproc),
# --loom build/ci/bin/loom, -o build/regress/<backends>. With
# --launcher slurm it prints the job id (and waits with --wait); merge later
# with `loom experiment --merge DIR`. A backend the build lacks (a
# configuration not verilated) reports the entry as SKIPPED and passes, as in
# ctest.
#
#   scripts/regress.sh --coverage [--check] [--build DIR] [-j N] [-o DIR]
#
# RTL coverage (docs/coverage.md): builds the `coverage` preset (build/coverage,
# or --build DIR configured with -DLOOM_RTL_COVERAGE=ON), runs its rtl-labelled
# tests (unit testbenches, random streams, errors) and the regression list on
# the rtl backend with LOOM_COVERAGE_DIR set, merges the .dat files with
# verilator_coverage, writes DIR/coverage.info (LCOV) and DIR/html/ (genhtml),
# and prints line, toggle and cover-point coverage per module
# (scripts/coverage_report.py). --check fails when docs/coverage-goals.yaml
# is not met. Default -o build/coverage-report.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "loom: error: regress: $*" >&2; exit 1; }

backends=ref tag=fast launcher=local jobs=$(nproc) loom="$ROOT/build/ci/bin/loom" out="" wait=""
coverage="" check="" covbuild="" loom_given=""
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) [ $# -ge 2 ] || die "--backend needs a value"; backends=$2; shift 2 ;;
    --tag) [ $# -ge 2 ] || die "--tag needs a value"; tag=$2; shift 2 ;;
    --launcher) [ $# -ge 2 ] || die "--launcher needs a value"; launcher=$2; shift 2 ;;
    -j) [ $# -ge 2 ] || die "-j needs a value"; jobs=$2; shift 2 ;;
    --loom) [ $# -ge 2 ] || die "--loom needs a value"; loom=$2; loom_given=1; shift 2 ;;
    -o) [ $# -ge 2 ] || die "-o needs a value"; out=$2; shift 2 ;;
    --wait) wait=--wait; shift ;;
    --coverage) coverage=1; shift ;;
    --check) check=--check; shift ;;
    --build) [ $# -ge 2 ] || die "--build needs a value"; covbuild=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[ -n "$coverage" ] || [ -z "$check$covbuild" ] || die "--check and --build go with --coverage"
case "$jobs" in ''|*[!0-9]*|0) die "-j: expected a positive number, got '$jobs'" ;; esac
case "$tag" in fast|nightly) ;; all) tag="" ;; *) die "--tag: expected fast, nightly or all, got '$tag'" ;; esac
if [ -n "$coverage" ]; then
  [ "$launcher" = local ] || die "--coverage runs locally only (the .dat files are merged here)"
  [ "$backends" = ref ] || die "--coverage runs the rtl backend; leave out --backend"
  [ -z "$loom_given" ] || die "--coverage uses the coverage build's loom; leave out --loom"
  exec bash "$ROOT/scripts/coverage.sh" "$ROOT" "${covbuild:-$ROOT/build/coverage}" \
    "${out:-$ROOT/build/coverage-report}" "$jobs" "$tag" "$check"
fi
[ -x "$loom" ] || die "--loom $loom is not an executable (build first: scripts/build.sh)"
loom=$(cd "$(dirname "$loom")" && pwd)/$(basename "$loom")
out=${out:-$ROOT/build/regress/${backends//,/_}}
mkdir -p "$out" || die "$out: cannot create the output directory"
PY=${PYTHON:-python3}

# The command list: one command per entry, configuration and backend.
"$PY" - "$ROOT" "$loom" "$tag" "$backends" "$out/commands.json" <<'PYEOF'
import json, os, subprocess, sys
root, loom, tag, backends, dst = sys.argv[1:6]
runner = os.path.join(root, "tests", "e2e", "run_regression.py")
cmds = []
for b in [x for x in backends.split(",") if x]:
    r = subprocess.run([sys.executable, runner, "--loom", loom, "--root", root, "--list", "--tag", tag, "--backend", b],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("loom: error: regress: tests/e2e/regression.yaml: " + (r.stderr.strip().splitlines() or ["unreadable"])[-1])
    for case in [c for c in r.stdout.strip().split(";") if c]:
        cmds.append({"name": "%s.%s" % (b, case),
                     "argv": [sys.executable, runner, "--loom", loom, "--root", root, "--backend", b, "--entry", case]})
if not cmds:
    sys.exit("loom: error: regress: no entries with tag '%s' on %s" % (tag or "any", backends))
tmp = dst + ".tmp"
with open(tmp, "w") as f:
    json.dump({"commands": cmds}, f, indent=1)
os.replace(tmp, dst)
PYEOF

exec "$loom" experiment --commands "$out/commands.json" -o "$out" --launcher "$launcher" -j "$jobs" $wait
