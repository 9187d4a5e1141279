#!/usr/bin/env bash
# Installs everything loom needs on Debian 12: system packages from Debian's
# archive and the Python tools from PyPI. Idempotent; fast when all is present.
set -euo pipefail

APT_PACKAGES=(
  build-essential cmake ninja-build ccache git
  verilator libsystemc-dev yosys lcov
  libcli11-dev nlohmann-json3-dev libgtest-dev libgmock-dev libbenchmark-dev
  libprotobuf-dev protobuf-compiler libonnx-dev libonnx-testdata
  libxrt-dev uuid-dev libyaml-dev
  python3 python3-pip python3-yaml
  qemu-user slurm-wlm munge
  clang-14 clang-format-14 libfuzzer-14-dev libclang-rt-14-dev
)

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
# with it). Every package is pinned in scripts/requirements.txt; anything
# missing or at another version is installed at the pinned one.
PY=${PYTHON:-python3}
REQ="$(dirname "$0")/requirements.txt"
if "$PY" - "$REQ" <<'PYEOF'
import sys
from importlib import metadata
bad = []
for line in open(sys.argv[1]):
    line = line.split("#", 1)[0].strip()
    if not line:
        continue
    name, want = line.split("==")
    try:
        have = metadata.version(name)
    except metadata.PackageNotFoundError:
        have = None
    if have != want:
        bad.append(f"{name} {have or 'missing'} (pinned {want})")
if bad:
    print("setup: Python packages to install: " + ", ".join(bad))
    sys.exit(1)
PYEOF
then
  echo "setup: Python packages present at the pinned versions"
else
  "$PY" -m pip install -q --disable-pip-version-check -r "$REQ" \
    || "$PY" -m pip install -q --disable-pip-version-check --break-system-packages -r "$REQ"
fi
echo "setup: done"
