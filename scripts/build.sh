#!/usr/bin/env bash
# Configures and builds loom with a CMake preset (default: ci = release with
# warnings as errors). Usage: scripts/build.sh [PRESET]
set -euo pipefail
cd "$(dirname "$0")/.."
PRESET=${1:-ci}
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/loom-ccache}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# Objects built with -g (the asan preset) hit the cache from any clone: the
# debug info's compilation folder is the only thing that would differ.
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
if [ ! -f "build/$PRESET/build.ninja" ]; then
  cmake --preset "$PRESET" >/dev/null
fi
cmake --build --preset "$PRESET" -j "$(nproc)"
