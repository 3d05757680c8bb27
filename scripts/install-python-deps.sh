#!/usr/bin/env bash
# Install what the Python reference adapters need, on Debian bookworm, as root.
#
#   scripts/install-python-deps.sh [VENV_DIR]
#
# 1. Debian packages: python3-numpy (numpy_step.py), python3-torch (torch_step.py,
#    torch 1.13 run with /usr/bin/python3) and python3-venv.
# 2. A virtual environment for flax_nnx_step.py (default: .venv-flax in the repo
#    root) with pinned jax/jaxlib/flax/optax from PyPI, CPU only. These are the
#    newest releases that support Debian bookworm's Python 3.11.
#
# Idempotent: a rerun skips what is already in place. Prints how long each part took.
set -euo pipefail

JAX_VERSION=0.10.2
FLAX_VERSION=0.12.8
OPTAX_VERSION=0.2.8

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv-flax}"

timed() {  # timed LABEL CMD...: run CMD, then print LABEL and the seconds it took
  local label="$1" start=$SECONDS
  shift
  "$@"
  echo "install-python-deps: $label took $((SECONDS - start)) s" >&2
}

apt_part() {
  local pkgs=(python3-numpy python3-torch python3-venv)
  if dpkg-query -W -f='${Status}\n' "${pkgs[@]}" 2>/dev/null | grep -vq '^install ok installed$' \
     || [ "$(dpkg-query -W -f='${Status}\n' "${pkgs[@]}" 2>/dev/null | wc -l)" -ne "${#pkgs[@]}" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y --no-install-recommends "${pkgs[@]}"
  else
    echo "install-python-deps: ${pkgs[*]} already installed" >&2
  fi
}

venv_part() {
  local want="jax==$JAX_VERSION jaxlib==$JAX_VERSION flax==$FLAX_VERSION optax==$OPTAX_VERSION"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.sgdc-requirements" 2>/dev/null)" = "$want" ]; then
    echo "install-python-deps: $venv already has $want" >&2
    return 0
  fi
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --disable-pip-version-check --no-input -q $want
  "$venv/bin/python" -c 'import jax, flax, optax; print("jax", jax.__version__, "flax", flax.__version__, "optax", optax.__version__)'
  echo "$want" > "$venv/.sgdc-requirements"
}

timed "apt packages" apt_part
timed "flax venv ($venv)" venv_part
