#!/usr/bin/env bash
# Formats the host C++ sources with clang-format-14 and the repository's
# .clang-format (Google style, 120 columns), or with --check lists the files
# that differ from it and exits 1 (the CTest layering.format).
#
# Usage: scripts/format.sh [--check]
# Generated files (host/spec/loom/spec_gen.h, from scripts/gen_spec.py) are
# left as their generator writes them.
set -euo pipefail
cd "$(dirname "$0")/.."
fmt=${CLANG_FORMAT:-clang-format-14}
if ! command -v "${fmt}" >/dev/null 2>&1; then
  echo "format.sh: ${fmt} not found (scripts/setup.sh installs it)" >&2
  exit 2
fi
mapfile -t files < <(find host -name '*.cc' -o -name '*.h' | grep -v '^host/spec/loom/spec_gen\.h$' | sort)
if [[ "${1:-}" != "--check" ]]; then
  "${fmt}" -i "${files[@]}"
  exit 0
fi
bad=0
for f in "${files[@]}"; do
  if ! "${fmt}" --dry-run -Werror "${f}" >/dev/null 2>&1; then
    echo "format.sh: ${f} is not clang-formatted (scripts/format.sh fixes it)" >&2
    bad=1
  fi
done
if [[ ${bad} -eq 0 ]]; then echo "${#files[@]} files clang-formatted"; fi
exit "${bad}"
