#!/usr/bin/env python3
"""A Flax NNX Linear layer trained by optax.sgd (with or without momentum), run by JAX on
the CPU, the way a training loop runs it: one jit-compiled train step (forward, loss,
gradients, optimizer update).

    conformance/python/run-adapter conformance/python/adapters/flax_nnx_step.py

Tested with jax/jaxlib 0.10.2, flax 0.12.8, optax 0.2.8 (the versions
scripts/install-python-deps.sh pins).

Per case: an `nnx.Linear(d, k)` holds the case's kernel and bias, an `nnx.Optimizer`
wraps `optax.inject_hyperparams(optax.sgd)` with the case's learning rate (a state, not a
constant, so one compiled step serves every learning rate), and its step counter is set
to case.step. The train step is NNX's functional form, `nnx.split` outside and
`nnx.merge` inside one `jax.jit`: value_and_grad of the mean squared error, then
`optimizer.update`. XLA compiles it once per (n, d, k) and optimizer structure.

SGD with momentum, written as a user writes it with optax, each chain wrapped in
`optax.inject_hyperparams` (learning rate, momentum and weight decay are states: one
compiled step serves every value; `nesterov` is a Python bool that optax.trace branches
on, so it is part of the structure):

- coupled weight decay (added to the gradient, so it enters the buffer, as
  torch.optim.SGD does): `optax.chain(optax.add_decayed_weights(wd),
  optax.sgd(lr, momentum=mu, nesterov=...))`;
- decoupled weight decay (added to the direction, outside the buffer, as optax.adamw
  does for Adam): `optax.chain(optax.trace(decay=mu, nesterov=...),
  optax.add_decayed_weights(wd), optax.scale_by_learning_rate(lr))`.

A case without weight decay takes the coupled chain with wd = 0. optax.trace is the
buffer: it is set from the case's buffer (zeros on a first step, as optax initialises it,
so the first buffer is the gradient itself) and reported after the update. optax has no
dampening: declared without. So there are five optimizer structures (plain SGD, and
coupled or decoupled momentum with or without Nesterov), each compiled only for the
shapes it meets.

Batches: the adapter declares max_batch, so the suite hands it many cases at once; it
compiles the batch's new (shape, structure) pairs concurrently (XLA compiles in C++,
outside the GIL), then steps each case. Compilation is most of a run's time: about 0.2 s
of CPU per compiled step here, and a default run meets most of the 5 structures on each
of its 12 shapes (53 compiled steps at seed 1).

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


def coupled_momentum(learning_rate: Any, momentum: Any, weight_decay: Any,
                     nesterov: bool) -> Any:
    """SGD with momentum, the weight decay added to the gradient (it enters the buffer)."""
    return optax.chain(optax.add_decayed_weights(weight_decay),
                       optax.sgd(learning_rate, momentum=momentum, nesterov=nesterov))


def decoupled_momentum(learning_rate: Any, momentum: Any, weight_decay: Any,
                       nesterov: bool) -> Any:
    """SGD with momentum, the weight decay added to the direction, outside the buffer."""
    return optax.chain(optax.trace(decay=momentum, nesterov=nesterov),
                       optax.add_decayed_weights(weight_decay),
                       optax.scale_by_learning_rate(learning_rate))


# An optimizer structure: "sgd", or (decay convention, nesterov) for momentum.
Structure = Any
SGD: Structure = "sgd"


def _transformation(structure: Structure) -> Any:
    if structure == SGD:
        return optax.inject_hyperparams(optax.sgd)(learning_rate=0.0)
    decay, nesterov = structure
    chain = coupled_momentum if decay == "coupled" else decoupled_momentum
    return optax.inject_hyperparams(chain, static_args="nesterov")(
        learning_rate=0.0, momentum=0.0, weight_decay=0.0, nesterov=nesterov)


# One transformation per optimizer structure, and one layer with its optimizer per
# (d, k, structure), reused and refilled for every case as a training loop would: their
# structure (what jit compiles for) stays the same.
TXS: dict[Structure, Any] = {s: _transformation(s) for s in
                             [SGD] + [(decay, nesterov) for decay in ("coupled", "decoupled")
                                      for nesterov in (False, True)]}
_layers: dict[tuple[int, int, Structure], tuple[Any, Any]] = {}


def _structure(case: sgdc_adapter.Case) -> Structure:
    o = case.optimizer
    if o is None:
        return SGD
    if o.dampening != 0:  # the kit rejects it first: dampening is not declared
        raise sgdc_adapter.RejectCase("optax's momentum (optax.trace) has no dampening")
    return (o.decay if o.weight_decay != 0 else "coupled", o.nesterov)


def _layer(d: int, k: int, structure: Structure) -> tuple[Any, Any]:
    """The (d, k, structure) layer and its optimizer, made once. Every case refills the
    kernel, so it starts at zeros: a random initialiser would compile its own XLA
    programs for each new (d, k)."""
    key = (d, k, structure)
    if key not in _layers:
        model = nnx.Linear(d, k, kernel_init=nnx.initializers.zeros_init(), rngs=nnx.Rngs(0))
        _layers[key] = model, nnx.Optimizer(model, TXS[structure], wrt=nnx.Param)
    return _layers[key]


def _parts(case: sgdc_adapter.Case) -> tuple[Any, Any, Any, Any]:
    """The train step's arguments for `case`, on its (d, k, structure) layer: the split
    model and optimizer, x and y. They hold the layer's variables: step them before the
    layer is refilled."""
    if case.step >= 2**32:
        raise sgdc_adapter.RejectCase("NNX keeps the step counter as uint32; step must be < 2**32")
    model, optimizer = _layer(case.d, case.k, _structure(case))
    model.kernel[...] = jnp.asarray(case.kernel)
    model.bias[...] = jnp.asarray(case.bias)
    hyperparams = optimizer.opt_state.hyperparams
    hyperparams["learning_rate"][...] = jnp.float32(case.lr)
    o = case.optimizer
    if o is not None:
        hyperparams["momentum"][...] = jnp.float32(o.momentum)
        hyperparams["weight_decay"][...] = jnp.float32(o.weight_decay)
        trace = optax.tree.get(optimizer.opt_state, "trace")  # optax.trace's buffer
        fresh = case.momentum_kernel is None or case.momentum_bias is None
        trace["kernel"][...] = (jnp.zeros((case.d, case.k), jnp.float32) if fresh
                                else jnp.asarray(case.momentum_kernel))
        trace["bias"][...] = (jnp.zeros(case.k, jnp.float32) if fresh
                              else jnp.asarray(case.momentum_bias))
    optimizer.step[...] = jnp.asarray(case.step, dtype=jnp.uint32)
    graphdef, state = nnx.split((model, optimizer))
    return graphdef, state, jnp.asarray(case.x), jnp.asarray(case.y)


# Compiled train steps by (n, d, k, structure).
_compiled: dict[tuple[int, int, int, Structure], Any] = {}


def _key(case: sgdc_adapter.Case) -> tuple[int, int, int, Structure]:
    return (case.n, case.d, case.k, _structure(case))


def _compile(key: tuple[int, int, int, Structure], graphdef: Any, state: Any) -> None:
    """Compiles the train step for `key` from its layer's split model and optimizer and
    the shapes of x and y (what the step is compiled for: the values play no part)."""
    n, d, k, _ = key
    _compiled[key] = train_step.lower(graphdef, state, jax.ShapeDtypeStruct((n, d), jnp.float32),
                                      jax.ShapeDtypeStruct((n, k), jnp.float32)).compile()


def _compile_new_shapes(cases: list[sgdc_adapter.Case]) -> None:
    """Compiles the train step for the shapes and structures of `cases` not compiled yet,
    concurrently."""
    new: dict[tuple[int, int, int, Structure], tuple[Any, Any]] = {}
    for case in cases:
        try:
            key = _key(case)
        except Exception:  # noqa: BLE001 - the case is answered with its error when stepped
            continue
        if key not in _compiled and key not in new:
            new[key] = nnx.split(_layer(*key[1:]))
    if new:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            for f in [pool.submit(_compile, key, *parts) for key, parts in new.items()]:
                f.result()


def _run(case: sgdc_adapter.Case) -> dict[str, Any]:
    parts = _parts(case)
    graphdef = parts[0]
    loss, grads, state = _compiled[_key(case)](*parts)
    model, optimizer = nnx.merge(graphdef, state)
    out = {
        "loss": np.asarray(loss),
        "kernel": np.asarray(model.kernel[...]),
        "bias": np.asarray(model.bias[...]),
        "grad_kernel": np.asarray(grads["kernel"][...]),
        "grad_bias": np.asarray(grads["bias"][...]),
        "step": int(optimizer.step[...]),
    }
    if case.optimizer is not None:
        trace = optax.tree.get(optimizer.opt_state, "trace")
        out["momentum_kernel"] = np.asarray(trace["kernel"][...])
        out["momentum_bias"] = np.asarray(trace["bias"][...])
    return out


def step_batch(cases: list[sgdc_adapter.Case]) -> list[dict[str, Any] | Exception]:
    _compile_new_shapes(cases)
    out: list[dict[str, Any] | Exception] = []
    for case in cases:
        try:
            out.append(_run(case))
        except Exception as e:  # noqa: BLE001 - answers this case alone
            out.append(e)
    return out


if __name__ == "__main__":
    sgdc_adapter.serve(step_batch=step_batch, max_batch=MAX_BATCH, name="flax-nnx",
                       version=flax.__version__, capabilities=("grads", "step_counter"),
                       subnormals="ftz", counter=("uint32", "wrap"),
                       momentum=sgdc_adapter.MomentumSupport(
                           dampening=False, nesterov=True, weight_decay=("coupled", "decoupled")))
