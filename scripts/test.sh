#!/usr/bin/env bash
# Sets everything up, builds, and runs every test not labelled `slow`: first
# the release build with warnings as errors (preset ci), then the host tests
# again under AddressSanitizer + UndefinedBehaviorSanitizer (preset asan).
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
if [ "${LOOM_SKIP_ASAN:-0}" != 1 ]; then
  bash scripts/build.sh asan
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build/asan --output-on-failure -j "$(nproc)" -LE slow
fi
