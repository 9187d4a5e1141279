#!/usr/bin/env bash
# Lints loom RTL with `verilator --lint-only -Wall` once per top-level block (rtl/filelist.f + rtl/loom.vlt).
#
# Usage: scripts/lint.sh [TOP ...]   (default: every block built so far)
# Exit status is non-zero if any block has a warning or error.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

if ! command -v verilator >/dev/null 2>&1; then
  echo "lint.sh: verilator not found on PATH" >&2
  exit 2
fi

tops=("$@")
if [[ ${#tops[@]} -eq 0 ]]; then
  tops=(loom_sp_ram loom_dp_ram loom_requant loom_postop loom_systolic_array loom_csr loom_sem loom_axi_mux loom_spad loom_load_unit loom_store_unit loom_compute_unit)
fi

status=0
for top in "${tops[@]}"; do
  if verilator --lint-only -Wall --assert rtl/loom.vlt -f rtl/filelist.f --top-module "${top}"; then
    echo "lint ${top}: clean"
  else
    echo "lint ${top}: FAILED" >&2
    status=1
  fi
done
exit "${status}"
