#!/usr/bin/env python3
"""The seed program: Flax NNX Linear + optax.sgd, run by JAX on the CPU.

    conformance/python/run-adapter conformance/python/adapters/flax_nnx_step.py

Tested with jax/jaxlib 0.10.2, flax 0.12.8, optax 0.2.8 (the versions that script
pins), and also with flax 0.10.7 (jax 0.6.2) and flax 0.11.2 (jax 0.7.2): small shims
below cover the older APIs (`nnx.Optimizer(model, tx)` without `wrt`,
`optimizer.update(grads)`, `.value` where `[...]` is missing).

Per case: `nnx.Linear(d, k)` gets the case's kernel and bias, `nnx.Optimizer` wraps
`optax.sgd(lr)` with lr the case's float32 value exactly, its step counter is set to
case.step, then `nnx.value_and_grad` and `optimizer.update`. The reported step is the
optimizer's own counter, a uint32 (larger case.step values are rejected); declared
counter=("uint32", "wrap"), what a uint32 array's `+ 1` does at 2**32 - 1.

The loss and gradients are jit-compiled (nnx.jit caches one executable per shape, as
a training loop would use it); the suite's ever new shapes make the first case of each
shape pay for a compilation (about 0.4 s), which is most of a suite run's time. Eager
execution is no faster: JAX compiles each primitive per shape too. The optimizer update
runs eagerly: the learning rate lives inside the optax transformation, which jit treats
as static, so jitting the update would recompile for every new learning rate. One
Linear layer per (d, k) is kept and refilled, as a training loop would.

Subnormals: XLA on CPU flushes subnormal inputs and results to zero (FTZ/DAZ), so
the adapter declares subnormals="ftz".
"""

from __future__ import annotations

import inspect
import os
from typing import Any

import sgdc_adapter

os.environ["JAX_PLATFORMS"] = "cpu"
flax, jnp, np, optax, nnx = sgdc_adapter.require("flax", "jax.numpy", "numpy", "optax", "flax.nnx")

_WRT = "wrt" in inspect.signature(nnx.Optimizer.__init__).parameters  # Flax >= 0.11
_UPDATE_TAKES_MODEL = "model" in inspect.signature(nnx.Optimizer.update).parameters


def _get(var: Any) -> Any:
    """A Variable's array: `var[...]` (`.value` is deprecated in Flax 0.12), else `.value`."""
    return var[...] if hasattr(var, "__getitem__") else var.value


_models: dict[tuple[int, int], Any] = {}


@nnx.jit
def loss_and_grads(model: Any, x: Any, y: Any) -> Any:
    loss_fn = lambda m: jnp.mean((m(x) - y) ** 2)  # noqa: E731
    return nnx.value_and_grad(loss_fn)(model)


def step(case: sgdc_adapter.Case) -> dict[str, Any]:
    if case.step >= 2**32:
        raise sgdc_adapter.RejectCase("NNX keeps the step counter as uint32; step must be < 2**32")
    if (case.d, case.k) not in _models:  # the layer is reused; its values are replaced below
        _models[case.d, case.k] = nnx.Linear(case.d, case.k, rngs=nnx.Rngs(0))
    model = _models[case.d, case.k]
    model.kernel[...] = jnp.asarray(case.kernel)
    model.bias[...] = jnp.asarray(case.bias)
    tx = optax.sgd(jnp.float32(case.lr))
    optimizer = nnx.Optimizer(model, tx, wrt=nnx.Param) if _WRT else nnx.Optimizer(model, tx)
    optimizer.step[...] = jnp.asarray(case.step, dtype=_get(optimizer.step).dtype)

    loss, grads = loss_and_grads(model, jnp.asarray(case.x), jnp.asarray(case.y))
    if _UPDATE_TAKES_MODEL:
        optimizer.update(model, grads)
    else:
        optimizer.update(grads)

    return {
        "loss": np.asarray(loss),
        "kernel": np.asarray(_get(model.kernel)),
        "bias": np.asarray(_get(model.bias)),
        "grad_kernel": np.asarray(_get(grads["kernel"])),
        "grad_bias": np.asarray(_get(grads["bias"])),
        "step": int(_get(optimizer.step)),
    }


if __name__ == "__main__":
    sgdc_adapter.serve(step, name="flax-nnx", version=flax.__version__,
                       capabilities=("grads", "step_counter"), subnormals="ftz",
                       counter=("uint32", "wrap"))
