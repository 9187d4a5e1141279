#!/usr/bin/env bash
# Lints loom RTL with `verilator --lint-only -Wall` once per top-level block (rtl/filelist.f + rtl/loom.vlt).
#
# Usage: scripts/lint.sh [TOP ...]   (default: every block, the whole fabric and each Vitis kernel top)
# Exit status is non-zero if any block has a warning or error.
#
# Sources: rtl/filelist.f, then the core/fabric files it does not list yet,
# then the generated kernel tops rtl/generated/loom_top_<config>.sv (one per
# configuration, from scripts/gen_kernel_top.py). loom_fabric is linted with
# its default (tiny) parameters; each loom_top_<config> lints the fabric with
# that configuration's parameters.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${root}"

if ! command -v verilator >/dev/null 2>&1; then
  echo "lint.sh: verilator not found on PATH" >&2
  exit 2
fi

extra=()
for f in rtl/core/loom_fifo.sv rtl/core/loom_axi_drain.sv rtl/core/loom_fetch.sv \
         rtl/core/loom_dispatch.sv rtl/core/loom_core.sv rtl/fabric/loom_fabric.sv; do
  if ! grep -qx "${f}" rtl/filelist.f; then
    extra+=("${f}")
  fi
done
kernel_tops=()
for f in rtl/generated/loom_top_*.sv; do
  [[ -e "${f}" ]] || continue
  if ! grep -qx "${f}" rtl/filelist.f; then
    extra+=("${f}")
  fi
  kernel_tops+=("$(basename "${f}" .sv)")
done

tops=("$@")
if [[ ${#tops[@]} -eq 0 ]]; then
  tops=(loom_sp_ram loom_dp_ram loom_requant loom_postop loom_systolic_array loom_csr loom_sem loom_axi_mux
        loom_spad loom_load_unit loom_store_unit loom_compute_unit loom_fabric "${kernel_tops[@]}")
fi

status=0
for top in "${tops[@]}"; do
  if verilator --lint-only -Wall --assert rtl/loom.vlt -f rtl/filelist.f "${extra[@]}" --top-module "${top}"; then
    echo "lint ${top}: clean"
  else
    echo "lint ${top}: FAILED" >&2
    status=1
  fi
done
exit "${status}"
