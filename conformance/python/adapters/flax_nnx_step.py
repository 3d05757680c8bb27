#!/usr/bin/env python3
"""A Flax NNX Linear layer trained by optax.sgd, run by JAX on the CPU, the way a training
loop runs it: one jit-compiled train step (forward, loss, gradients, optimizer update).

    conformance/python/run-adapter conformance/python/adapters/flax_nnx_step.py

Tested with jax/jaxlib 0.10.2, flax 0.12.8, optax 0.2.8 (the versions
scripts/install-python-deps.sh pins).

Per case: an `nnx.Linear(d, k)` holds the case's kernel and bias, an `nnx.Optimizer`
wraps `optax.inject_hyperparams(optax.sgd)` with the case's learning rate (a state, not a
constant, so one compiled step serves every learning rate), and its step counter is set
to case.step. The train step is NNX's functional form, `nnx.split` outside and
`nnx.merge` inside one `jax.jit`: value_and_grad of the mean squared error, then
`optimizer.update`. XLA compiles it once per (n, d, k).

Batches: the adapter declares max_batch, so the suite hands it many cases at once; it
compiles the batch's new shapes concurrently (XLA compiles in C++, outside the GIL), then
steps each case. Compilation is most of a run's time: about 0.6 s per shape here.

Counter: NNX keeps `Optimizer.step` as a uint32 array advanced by `+= 1`, which wraps to 0
after 2**32 - 1: declared counter=("uint32", "wrap"). Larger case.step values are rejected.

Subnormals: XLA on CPU flushes subnormal inputs and results to zero (FTZ/DAZ), so the
adapter declares subnormals="ftz".
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import sgdc_adapter

os.environ["JAX_PLATFORMS"] = "cpu"
jax, flax, jnp, np, optax, nnx = sgdc_adapter.require("jax", "flax", "jax.numpy", "numpy", "optax",
                                                      "flax.nnx")

MAX_BATCH = 32


@jax.jit
def train_step(graphdef: Any, state: Any, x: Any, y: Any) -> Any:
    model, optimizer = nnx.merge(graphdef, state)
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss, grads, nnx.state((model, optimizer))


# One transformation, and one layer with its optimizer per (d, k), reused and refilled for
# every case as a training loop would: their structure (what jit compiles for) stays the same.
TX = optax.inject_hyperparams(optax.sgd)(learning_rate=0.0)
_layers: dict[tuple[int, int], tuple[Any, Any]] = {}


def _layer(d: int, k: int) -> tuple[Any, Any]:
    model = nnx.Linear(d, k, rngs=nnx.Rngs(0))
    return model, nnx.Optimizer(model, TX, wrt=nnx.Param)


def _parts(case: sgdc_adapter.Case, layer: tuple[Any, Any] | None = None) -> tuple[Any, Any, Any, Any]:
    """The train step's arguments for `case` (with its (d, k) layer, or `layer`): the split
    model and optimizer, x and y. They hold the layer's variables: step them before the
    layer is refilled."""
    if case.step >= 2**32:
        raise sgdc_adapter.RejectCase("NNX keeps the step counter as uint32; step must be < 2**32")
    if layer is None:
        if (case.d, case.k) not in _layers:
            _layers[case.d, case.k] = _layer(case.d, case.k)
        layer = _layers[case.d, case.k]
    model, optimizer = layer
    model.kernel[...] = jnp.asarray(case.kernel)
    model.bias[...] = jnp.asarray(case.bias)
    optimizer.opt_state.hyperparams["learning_rate"][...] = jnp.float32(case.lr)
    optimizer.step[...] = jnp.asarray(case.step, dtype=jnp.uint32)
    graphdef, state = nnx.split((model, optimizer))
    return graphdef, state, jnp.asarray(case.x), jnp.asarray(case.y)


_compiled: dict[tuple[int, int, int], Any] = {}


def _compile(shape: tuple[int, int, int], parts: tuple[Any, ...]) -> None:
    _compiled[shape] = train_step.lower(*parts).compile()


def _compile_new_shapes(cases: list[sgdc_adapter.Case]) -> None:
    """Compiles the train step for the shapes of `cases` not compiled yet, concurrently,
    each from the arguments of its first case on a layer of its own."""
    new: dict[tuple[int, int, int], tuple[Any, ...]] = {}
    for case in cases:
        shape = (case.n, case.d, case.k)
        if shape in _compiled or shape in new:
            continue
        try:
            new[shape] = _parts(case, _layer(case.d, case.k))
        except Exception:  # noqa: BLE001 - the case is answered with its error when stepped
            continue
    if new:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for f in [pool.submit(_compile, shape, parts) for shape, parts in new.items()]:
                f.result()


def _run(parts: tuple[Any, ...], shape: tuple[int, int, int]) -> dict[str, Any]:
    graphdef = parts[0]
    loss, grads, state = _compiled[shape](*parts)
    model, optimizer = nnx.merge(graphdef, state)
    return {
        "loss": np.asarray(loss),
        "kernel": np.asarray(model.kernel[...]),
        "bias": np.asarray(model.bias[...]),
        "grad_kernel": np.asarray(grads["kernel"][...]),
        "grad_bias": np.asarray(grads["bias"][...]),
        "step": int(optimizer.step[...]),
    }


def step_batch(cases: list[sgdc_adapter.Case]) -> list[dict[str, Any] | Exception]:
    _compile_new_shapes(cases)
    out: list[dict[str, Any] | Exception] = []
    for case in cases:
        try:
            out.append(_run(_parts(case), (case.n, case.d, case.k)))
        except Exception as e:  # noqa: BLE001 - answers this case alone
            out.append(e)
    return out


if __name__ == "__main__":
    sgdc_adapter.serve(step_batch=step_batch, max_batch=MAX_BATCH, name="flax-nnx",
                       version=flax.__version__, capabilities=("grads", "step_counter"),
                       subnormals="ftz", counter=("uint32", "wrap"))
