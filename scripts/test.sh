#!/usr/bin/env bash
# Sets everything up, builds, and runs every test except those labelled
# `slow` (run those with: scripts/test.sh -L slow, or ctest --test-dir build/ci -L slow).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh ci
if [ $# -gt 0 ]; then
  ctest --test-dir build/ci --output-on-failure -j "$(nproc)" "$@"
else
  ctest --test-dir build/ci --output-on-failure -j "$(nproc)" -LE slow
fi
