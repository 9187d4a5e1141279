#!/usr/bin/env bash
# Installs everything loom needs on Debian 12: system packages from Debian's
# archive and the Python tools from PyPI. Idempotent; fast when all is present.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache git
  verilator libsystemc-dev yosys
  libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libxrt-dev uuid-dev libyaml-dev
  python3 python3-pip python3-yaml
)
PY_PACKAGES=(pyyaml numpy onnx onnxruntime matplotlib)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: Debian packages present"
fi

# Python: use whichever python3 is first on PATH (the generators and tools run
# with it).
PY=${PYTHON:-python3}
py_missing=()
for m in "${PY_PACKAGES[@]}"; do
  mod=$m
  [ "$m" = "pyyaml" ] && mod=yaml
  "$PY" -c "import $mod" 2>/dev/null || py_missing+=("$m")
done
if [ ${#py_missing[@]} -gt 0 ]; then
  echo "setup: installing Python packages: ${py_missing[*]}"
  "$PY" -m pip install -q --disable-pip-version-check "${py_missing[@]}" \
    || "$PY" -m pip install -q --disable-pip-version-check --break-system-packages "${py_missing[@]}"
else
  echo "setup: Python packages present"
fi
echo "setup: done"
