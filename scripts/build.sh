#!/usr/bin/env bash
# Configures and builds loom with a CMake preset (default: ci = release with
# warnings as errors). Usage: scripts/build.sh [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${1:-ci}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/loom-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
if [ ! -f "build/$PRESET/build.ninja" ]; then
  cmake --preset "$PRESET" >/dev/null
fi
cmake --build --preset "$PRESET" -j "$(nproc)"
