#!/usr/bin/env bash
# Installs what sgd-conformance needs on Debian bookworm, as root (or with sudo).
#
#   scripts/install-deps.sh          compilers and libraries: enough to build and run the suite
#   scripts/install-deps.sh --all    also the Python adapters' venv (.venv: NumPy, pytest,
#                                    PyTorch, JAX/Flax/optax from PyPI, and the adapter kit),
#                                    made by scripts/install-python-deps.sh
#
# Idempotent: packages already present are left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"

packages=(
  build-essential cmake ninja-build pkg-config git python3
  libeigen3-dev libboost1.81-dev libgmp-dev libmpfr-dev
  libgtest-dev librapidcheck-dev nlohmann-json3-dev libcli11-dev libfmt-dev libbenchmark-dev
  clang-format clang libclang-rt-14-dev
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: build dependencies already installed" >&2
fi

if [ "${1:-}" = "--all" ]; then
  "$here/install-python-deps.sh"
fi
