#!/usr/bin/env bash
# Sets everything up, builds, and runs every test not labelled `slow`: first
# the release build with warnings as errors (preset ci), then the host tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer with clang-14 and
# the libFuzzer smoke runs (preset asan),
# without the whole-flow sweeps (see ASAN_EXCLUDE_LABELS below).
# Extra arguments go to ctest for the ci build only, e.g.
#   scripts/test.sh -L slow      # the slow checks (large-config synthesis, ...)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh ci
if [ $# -gt 0 ]; then
  ctest --test-dir build/ci --output-on-failure -j "$(nproc)" "$@"
  exit 0
fi
ctest --test-dir build/ci --output-on-failure -j "$(nproc)" -LE slow
# The sanitizer pass covers the host libraries, the parsers, the runtime and
# the CLI's error paths. Tests that repeat one whole flow over many models or
# backends (labels zoo, e2e, onnx-run) ran in the release build above; under
# ASan they would take most of the time and find nothing the others miss.
# The long fuzz runs (label fuzz) are left out too; their smoke runs stay.
# The Slurm test (label slurm) runs alone (RUN_SERIAL) and drives the same
# CLI paths as the local sweep tests, which the sanitizer pass keeps.
ASAN_EXCLUDE_LABELS='slow|zoo|e2e|onnx-run|fuzz|slurm'
if [ "${LOOM_SKIP_ASAN:-0}" != 1 ]; then
  bash scripts/build.sh asan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan --output-on-failure -j "$(nproc)" -LE "$ASAN_EXCLUDE_LABELS"
fi
