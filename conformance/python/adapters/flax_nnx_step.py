#!/usr/bin/env python3
"""A Flax NNX Linear layer trained by optax.sgd (with or without momentum), optax's
Adam or optax's Adagrad, run by JAX on the CPU, the way a training loop runs it: one
jit-compiled train step (forward, loss, gradients, optimizer update), served by the
kit's harness.

    conformance/python/run-adapter conformance/python/adapters/flax_nnx_step.py [--eps-root VALUE]

Tested with jax/jaxlib 0.10.2, flax 0.12.8, optax 0.2.8 (the versions
scripts/install-python-deps.sh pins).

Everything is the harness's default (`sgdc_adapter.jax`): a bare `nnx.Linear(d, k)`,
`nnx.Optimizer` over `optax_optimizer`'s chains (optax.sgd; optax.trace for momentum,
Nesterov and both weight decay conventions; scale_by_adam for Adam and AdamW, eps_root
included; scale_by_rss for optax.adagrad, its epsilon inside the root; optax has no
dampening), the mean squared error's value_and_grad then
`optimizer.update`, jitted; NNX's uint32 counter, which wraps after 2**32 - 1, and XLA's
flushed subnormals declared. One program per shape serves every optimizer, and its
compiled programs go to JAX's persistent cache: a default run compiles 12 programs the
first time, none after.

optax keeps its counters as int32 saturating at 2**31 - 1, and Adam's t is the
incremented count, so from case.step = 2**31 - 1 on t is 2**31 - 1 rather than
case.step + 1. That changes nothing: b**t for such t lies far below float32's smallest
subnormal for every float32 b < 1, so the bias corrections round to 1 either way.

Under torch's convention (`--eps-root VALUE`): optax's Adam with a fixed eps_root, as
JAX code that differentiates through the update sets one (optax's documentation
recommends eps_root > 0 there), declared as torch's step is: without eps_root. The
suite must reject it where the second moment is small enough for eps_root to show
(docs/spec/step.md, Adam).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from typing import Any

os.environ["JAX_PLATFORMS"] = "cpu"
import sgdc_adapter  # noqa: E402
from sgdc_adapter.jax import optax_optimizer, serve_nnx  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps-root", type=float, metavar="VALUE",
                        help="Adam with this fixed eps_root, declared without eps_root as "
                             "torch's step (the suite must reject this)")
    eps_root = parser.parse_args().eps_root
    if eps_root is None:
        serve_nnx()

    def fixed_eps_root(o: Any) -> Any:
        return optax_optimizer(dataclasses.replace(o, eps_root=eps_root) if o.kind == "adam" else o)

    serve_nnx(optimizer_fn=fixed_eps_root, name=f"flax-nnx-eps-root-{eps_root:g}",
              momentum=sgdc_adapter.MomentumSupport(nesterov=True,
                                                    weight_decay=("coupled", "decoupled")),
              adam=sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"), eps_root=False))


if __name__ == "__main__":
    main()
