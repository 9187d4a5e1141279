#!/usr/bin/env bash
# Environment check of the loom Vitis flow: fails fast, with one line naming
# everything missing, when the AMD tools are not set up. Every flow target
# (scripts/vitis/Makefile) runs it before writing anything.
#
# Usage: check_env.sh [TOOL...]   (default: v++ vivado xrt; "xrt" checks XILINX_XRT)
set -u
need=("$@")
[ ${#need[@]} -eq 0 ] && need=(v++ vivado xrt)
missing=()
for t in "${need[@]}"; do
  case "$t" in
    xrt)
      if [ -z "${XILINX_XRT:-}" ]; then
        missing+=("XILINX_XRT (not set)")
      elif [ ! -d "${XILINX_XRT}" ]; then
        missing+=("XILINX_XRT (${XILINX_XRT} is not a directory)")
      fi
      ;;
    *)
      command -v "$t" >/dev/null 2>&1 || missing+=("$t (not on PATH)")
      ;;
  esac
done
if [ ${#missing[@]} -ne 0 ]; then
  joined=$(printf '%s, ' "${missing[@]}")
  echo "loom vitis flow: missing ${joined%, }; source <Vitis>/settings64.sh and /opt/xilinx/xrt/setup.sh first" >&2
  exit 1
fi
exit 0
