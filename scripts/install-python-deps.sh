#!/usr/bin/env bash
# One virtual environment for every Python adapter and the Python tests.
#
#   scripts/install-python-deps.sh [VENV_DIR]        default: .venv in the repository root
#
# 1. python3 -m venv VENV_DIR (with `python3`, the default interpreter; on Debian the
#    python3-venv package is installed when that fails for want of it).
# 2. Pinned frameworks from PyPI, CPU only: NumPy, pytest, PyTorch, JAX/jaxlib, Flax,
#    optax (the newest releases that support Python 3.11), and jsonschema (the tests
#    validate every JSON report against docs/report.schema.json).
# 3. The adapter kit itself (pip install ./conformance/python, distribution
#    sgd-conformance-kit, import name sgdc_adapter), reinstalled whenever its sources
#    change (a hash of conformance/python/src and pyproject.toml is kept in the venv).
#
# Idempotent: a rerun skips what is already in place. Prints how long each part took.
# conformance/python/run-adapter runs adapters with this venv's interpreter.
set -euo pipefail

NUMPY_VERSION=2.4.6
PYTEST_VERSION=9.2.0
TORCH_VERSION=2.13.0
JAX_VERSION=0.10.2
FLAX_VERSION=0.12.8
OPTAX_VERSION=0.2.8
JSONSCHEMA_VERSION=4.26.0

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$repo_root/.venv}"
kit="$repo_root/conformance/python"
python="$venv/bin/python"
pip=("$python" -m pip install --disable-pip-version-check --no-input -q)

timed() {  # timed LABEL CMD...: run CMD, then print LABEL and the seconds it took
  local label="$1" start=$SECONDS
  shift
  "$@"
  echo "install-python-deps: $label took $((SECONDS - start)) s" >&2
}

venv_part() {
  if [ -x "$python" ]; then
    echo "install-python-deps: $venv exists ($("$python" --version))" >&2
    return 0
  fi
  if python3 -m venv "$venv"; then
    return 0
  fi
  # Debian's python3 makes venvs (with pip) only with its python3-venv package.
  rm -rf "$venv"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "install-python-deps: python3 -m venv failed; installing python3-venv and retrying" >&2
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends python3-venv
  python3 -m venv "$venv"
}

frameworks_part() {
  local want="numpy==$NUMPY_VERSION pytest==$PYTEST_VERSION torch==$TORCH_VERSION"
  want+=" jax==$JAX_VERSION jaxlib==$JAX_VERSION flax==$FLAX_VERSION optax==$OPTAX_VERSION"
  want+=" jsonschema==$JSONSCHEMA_VERSION"
  if [ "$(cat "$venv/.sgdc-requirements" 2>/dev/null)" = "$want" ]; then
    echo "install-python-deps: $venv already has $want" >&2
    return 0
  fi
  # shellcheck disable=SC2086  # one word per requirement
  "${pip[@]}" $want
  "$python" -c 'import numpy, pytest, torch, jax, flax, optax, jsonschema
print("numpy", numpy.__version__, "pytest", pytest.__version__, "torch", torch.__version__,
      "jax", jax.__version__, "flax", flax.__version__, "optax", optax.__version__)'
  echo "$want" > "$venv/.sgdc-requirements"
}

kit_hash() {  # a hash of the kit's sources: what a reinstall depends on
  (cd "$kit" && find src pyproject.toml README.md -type f ! -path '*/__pycache__/*' \
     ! -path '*.egg-info/*' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) | sha256sum | cut -d' ' -f1
}

kit_part() (  # a subshell: its EXIT trap removes the build copy
  local want
  want="$(kit_hash)"
  if [ "$(cat "$venv/.sgdc-kit" 2>/dev/null)" = "$want" ]; then
    echo "install-python-deps: the kit in $venv is up to date" >&2
    return 0
  fi
  # Built in a temporary copy: the source tree gets no build/ or egg-info folders.
  local tmp
  tmp="$(mktemp -d)"
  trap 'rm -rf "$tmp"' EXIT
  cp -r "$kit/src" "$kit/pyproject.toml" "$kit/README.md" "$tmp/"
  find "$tmp" -name '*.egg-info' -prune -exec rm -rf {} + -o -name __pycache__ -prune -exec rm -rf {} +
  "${pip[@]}" --no-deps --force-reinstall "$tmp"
  "$python" -c 'import sgdc_adapter; print("sgdc_adapter", sgdc_adapter.__version__, "from", sgdc_adapter.__file__)'
  echo "$want" > "$venv/.sgdc-kit"
)

timed "venv ($venv)" venv_part
timed "frameworks" frameworks_part
timed "kit (sgd-conformance-kit)" kit_part
