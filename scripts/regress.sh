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
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
die() { echo "loom: error: regress: $*" >&2; exit 1; }

backends=ref tag=fast launcher=local jobs=$(nproc) loom="$ROOT/build/ci/bin/loom" out="" wait=""
while [ $# -gt 0 ]; do
  case "$1" in
    --backend) [ $# -ge 2 ] || die "--backend needs a value"; backends=$2; shift 2 ;;
    --tag) [ $# -ge 2 ] || die "--tag needs a value"; tag=$2; shift 2 ;;
    --launcher) [ $# -ge 2 ] || die "--launcher needs a value"; launcher=$2; shift 2 ;;
    -j) [ $# -ge 2 ] || die "-j needs a value"; jobs=$2; shift 2 ;;
    --loom) [ $# -ge 2 ] || die "--loom needs a value"; loom=$2; shift 2 ;;
    -o) [ $# -ge 2 ] || die "-o needs a value"; out=$2; shift 2 ;;
    --wait) wait=--wait; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
case "$tag" in fast|nightly) ;; all) tag="" ;; *) die "--tag: expected fast, nightly or all, got '$tag'" ;; esac
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
