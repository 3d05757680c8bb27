#!/usr/bin/env bash
# Default-run wall times of the shipped Python adapters in two trees, side by side:
#
#   bench/adapter_default_runs.sh CLI BEFORE_TREE AFTER_TREE [ROUNDS]
#
# Each round runs every adapter once from each tree, alternating, so that both see the
# same machine load: `CLI run --impl '.venv/bin/python TREE/conformance/python/adapters/X'`
# with the defaults (100 cases per property, seed 1), the tree's own kit first on
# PYTHONPATH. Prints one line per run: adapter, tree, verdict, seconds. The torch.compile
# and Flax NNX caches are shared by both trees (warm after the first round).
set -euo pipefail
cli=$1 before=$2 after=$3 rounds=${4:-2}
python=${SGDC_PYTHON:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.venv/bin/python}
adapters=(torch_step.py torch_compile_step.py torch_fsdp2_step.py flax_nnx_step.py jax_spmd_step.py)
for round in $(seq "$rounds"); do
  for a in "${adapters[@]}"; do
    for tree in "$before" "$after"; do
      start=$(date +%s.%N)
      verdict=$(PYTHONPATH="$tree/conformance/python/src" "$cli" run \
        --impl "'$python' '$tree/conformance/python/adapters/$a'" 2>&1 | tail -1 | cut -d: -f1) || true
      end=$(date +%s.%N)
      printf '%s\t%s\t%s\t%s\t%.1f\n' "$round" "$a" "$(basename "$tree")" "$verdict" \
        "$(echo "$end - $start" | bc)"
    done
  done
done
