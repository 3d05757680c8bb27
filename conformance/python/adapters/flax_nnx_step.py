#!/usr/bin/env python3
"""A Flax NNX Linear layer trained by optax.sgd (with or without momentum) or optax's
Adam, run by JAX on the CPU, the way a training loop runs it: one jit-compiled train step (forward, loss,
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

The state that functional form carries from step to step (the pytree of `nnx.split`'s
state: parameters, counter, hyperparameters, optimizer state) is built for each case
with the case's values as its leaves, host arrays, as a training loop carries it; the
step's new state is read from the same leaves. The layer and optimizer of each (d, k)
are made once per run, abstractly (`nnx.eval_shape`: no initialiser runs and no JAX
operation is compiled per shape), only for their graph definition and state layout.

SGD with momentum, written with optax's own transformations and wrapped in
`optax.inject_hyperparams` (learning rate, momentum and weight decays are states: one
compiled step serves every value; `nesterov` is a Python bool that optax.trace branches
on, so it is part of the structure): `optax.chain(optax.add_decayed_weights(wd_coupled),
optax.trace(decay=mu, nesterov=...), optax.add_decayed_weights(wd_decoupled),
optax.scale_by_learning_rate(lr))`. Coupled weight decay (added to the gradient, so it
enters the buffer, as torch.optim.SGD does: `chain(add_decayed_weights(wd), sgd(lr,
momentum=mu, nesterov=...))`) sets wd_coupled = wd and wd_decoupled = 0; decoupled (added
to the direction, outside the buffer, as optax.adamw does for Adam) the other way round.
The weight decay that is 0 adds 0 * p, an exact zero (the suite's inputs are finite), so
each convention's results are bit for bit those of its own chain, and the two share one
compiled step per shape. optax.trace is the
buffer: it is set from the case's buffer (zeros on a first step, as optax initialises it,
so the first buffer is the gradient itself) and reported after the update. optax has no
dampening: declared without.

Adam, likewise wrapped in `optax.inject_hyperparams` (learning rate, b1, b2, eps,
eps_root and weight decays are states): `optax.chain(optax.add_decayed_weights(wd_coupled),
optax.scale_by_adam(b1, b2, eps, eps_root), optax.add_decayed_weights(wd_decoupled),
optax.scale_by_learning_rate(lr))`, which is `optax.adamw` (decoupled, AdamW) with
wd_coupled = 0 and `chain(add_decayed_weights(wd), adam(...))` (coupled,
torch.optim.Adam's) with wd_decoupled = 0, each bit for bit, as for momentum. Declared with both
conventions and eps_root. The state of `optax.scale_by_adam` (ScaleByAdamState) is set
from the case: mu and nu the moments (zeros in fresh state, as optax initialises them),
count the step counter before the step, and the moments are reported after the update.
optax keeps count as an int32 that saturates (safe_increment at 2**31 - 1) and uses the
incremented count as t, so a case.step above 2**31 - 1 is set as 2**31 - 1, and from
case.step = 2**31 - 1 on t is 2**31 - 1 instead of case.step + 1. That changes nothing:
b**t for such t lies far below float32's smallest subnormal for every float32 b < 1
((1 - 2**-24)**(2**31 - 1) is about 3e-56), so the bias corrections round to 1 either
way. The counter the adapter reports and declares stays NNX's (below).

So there are four optimizer structures (plain SGD, momentum with or without Nesterov,
Adam), each compiled only for the shapes it meets.

Compiled programs are kept in JAX's persistent compilation cache
(`sgdc_adapter.enable_jax_compilation_cache`: ~/.cache/sgd-conformance/jax, or under
$SGDC_CACHE_DIR; SGDC_CACHE_DIR=off compiles every time), so a later run at the same
shapes loads them: a default run compiles 48 programs the first time, none after.

Batches: the adapter declares max_batch, so the suite hands it many cases at once; it
starts compiling the batch's new (shape, structure) pairs on a thread pool (XLA compiles
in C++, outside the GIL), then every other structure of each shape new to the run, and
steps the cases in order, each waiting only for its own program. Compilation is most of
a first run's time: about 0.1-0.17 s of one core per program here, and a default run
meets nearly every structure at each of its 12 shapes (46 of the 48 pairs at seed 1).
Per case the adapter dispatches the compiled step and nothing else: setting values into
NNX variables (`variable[...] = x`) would dispatch one JAX operation per value, and
`nnx.split` and `nnx.merge` per case cost more than the step at these sizes.

Under torch's convention (`--eps-root VALUE`): optax.adamw with a fixed eps_root, as JAX
code that differentiates through the update sets one (optax's documentation recommends
eps_root > 0 there), declared as torch's step is: without eps_root. The suite must reject
it where the second moment is small enough for eps_root to show (spec, Adam).

Counter: NNX keeps `Optimizer.step` as a uint32 array advanced by `+= 1`, which wraps to 0
after 2**32 - 1: declared counter=("uint32", "wrap"). Larger case.step values are rejected.

Subnormals: XLA on CPU flushes subnormal inputs and results to zero (FTZ/DAZ), so the
adapter declares subnormals="ftz".
"""

from __future__ import annotations

import argparse
import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import sgdc_adapter

os.environ["JAX_PLATFORMS"] = "cpu"
jax, flax, jnp, np, optax, nnx = sgdc_adapter.require("jax", "flax", "jax.numpy", "numpy", "optax",
                                                      "flax.nnx")
sgdc_adapter.enable_jax_compilation_cache(jax)

MAX_BATCH = 32
# --eps-root: a fixed eps_root for every Adam step, whatever the case says (None: the case's).
FIXED_EPS_ROOT: float | None = None


@jax.jit
def train_step(graphdef: Any, state: Any, x: Any, y: Any) -> Any:
    model, optimizer = nnx.merge(graphdef, state)
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss, grads, nnx.state((model, optimizer))


def momentum(learning_rate: Any, momentum: Any, coupled_weight_decay: Any,
             decoupled_weight_decay: Any, nesterov: bool) -> Any:
    """SGD with momentum; a weight decay added to the gradient (it enters the buffer), one
    added to the direction (outside the buffer), or both 0."""
    return optax.chain(optax.add_decayed_weights(coupled_weight_decay),
                       optax.trace(decay=momentum, nesterov=nesterov),
                       optax.add_decayed_weights(decoupled_weight_decay),
                       optax.scale_by_learning_rate(learning_rate))


def adam(learning_rate: Any, b1: Any, b2: Any, eps: Any, eps_root: Any,
         coupled_weight_decay: Any, decoupled_weight_decay: Any) -> Any:
    """Adam; a weight decay added to the gradient (it enters the moments: torch.optim.Adam),
    one added to the direction (optax.adamw), or both 0."""
    return optax.chain(optax.add_decayed_weights(coupled_weight_decay),
                       optax.scale_by_adam(b1=b1, b2=b2, eps=eps, eps_root=eps_root),
                       optax.add_decayed_weights(decoupled_weight_decay),
                       optax.scale_by_learning_rate(learning_rate))


# An optimizer structure: "sgd", ("momentum", nesterov), or "adam".
Structure = Any
SGD: Structure = "sgd"
ADAM: Structure = "adam"
DECAYS = ("coupled_weight_decay", "decoupled_weight_decay")
ADAM_HYPERPARAMETERS = ("b1", "b2", "eps", "eps_root")
INT32_MAX = 2**31 - 1


def _transformation(structure: Structure) -> Any:
    if structure == SGD:
        return optax.inject_hyperparams(optax.sgd)(learning_rate=0.0)
    if structure == ADAM:
        return optax.inject_hyperparams(adam)(
            learning_rate=0.0, **{key: 0.0 for key in ADAM_HYPERPARAMETERS + DECAYS})
    _, nesterov = structure
    return optax.inject_hyperparams(momentum, static_args="nesterov")(
        learning_rate=0.0, momentum=0.0, **{key: 0.0 for key in DECAYS}, nesterov=nesterov)


# One transformation per optimizer structure.
TXS: dict[Structure, Any] = {s: _transformation(s) for s in
                             [SGD, ("momentum", False), ("momentum", True), ADAM]}


def _structure(case: sgdc_adapter.Case) -> Structure:
    o = case.optimizer
    if o is None:
        return SGD
    if isinstance(o, sgdc_adapter.AdamOptimizer):
        return ADAM
    if o.dampening != 0:  # the kit rejects it first: dampening is not declared
        raise sgdc_adapter.RejectCase("optax's momentum (optax.trace) has no dampening")
    return ("momentum", o.nesterov)


def _slot(path: tuple[Any, ...]) -> str | None:
    """The name under which the adapter sets or reads the state leaf at `path` (the keys
    of `nnx.split((model, optimizer))`'s state, e.g. (1, 'opt_state', 'inner_state', 1,
    'trace', 'kernel', 'value')): "kernel" and "bias" (the model's), "step" (NNX's
    counter), "hyperparams.NAME", "trace.NAME" (optax.trace's buffer), "mu.NAME" and
    "nu.NAME" (Adam's moments), "adam.count" (scale_by_adam's counter); None for the
    leaves left as they are (inject_hyperparams' own count, which no schedule reads)."""
    keys = [k for k in path if k != "value"]
    if keys[0] == 0:
        return str(keys[-1])
    if keys == [1, "step"]:
        return "step"
    for i, key in enumerate(keys):
        if key == "hyperparams":
            return "hyperparams." + str(keys[i + 1])
        if key in ("trace", "mu", "nu"):
            return f"{key}.{keys[i + 1]}"
    if "inner_state" in keys and keys[-1] == "count":
        return "adam.count"
    return None


class Layer:
    """One (d, k, structure): the graph definition of the Linear layer with its
    nnx.Optimizer (jit's static argument) and the layout of their state, the pytree that
    NNX's functional API carries from step to step (`nnx.split` outside the jitted step,
    `nnx.merge` inside). A case's state is that pytree with the case's values as leaves,
    host arrays, as a training loop carries it; the step's new state is read from the
    same leaves."""

    def __init__(self, graphdef: Any, abstract_state: Any) -> None:
        self.graphdef = graphdef
        self.abstract_state = abstract_state
        with_paths, self.treedef = jax.tree_util.tree_flatten_with_path(abstract_state)
        self.template = [np.zeros(leaf.shape, leaf.dtype) for _, leaf in with_paths]
        self.slots: dict[str, int] = {}
        for index, (path, _) in enumerate(with_paths):
            name = _slot(tuple(getattr(k, "key", getattr(k, "name", getattr(k, "idx", k)))
                               for k in path))
            if name is not None:
                self.slots[name] = index

    def state(self, values: dict[str, Any]) -> Any:
        """The state pytree with `values` (by slot name) and host zeros elsewhere (the
        template's: never written to, so every case may share them)."""
        leaves = list(self.template)
        for name, value in values.items():
            index = self.slots[name]
            leaves[index] = np.asarray(value, dtype=self.template[index].dtype)
        return jax.tree_util.tree_unflatten(self.treedef, leaves)

    def read(self, state: Any) -> dict[str, Any]:
        """The leaves of a new state (the step's output) by slot name."""
        leaves, treedef = jax.tree_util.tree_flatten(state)
        assert treedef == self.treedef, (treedef, self.treedef)
        return {name: leaves[index] for name, index in self.slots.items()}


# The layers of each (d, k), one per optimizer structure, made once and abstractly
# (`nnx.eval_shape`: no initialiser runs, and no JAX operation is compiled per shape).
_layers: dict[tuple[int, int], dict[Structure, Layer]] = {}


def _layer(d: int, k: int, structure: Structure) -> Layer:
    if (d, k) not in _layers:
        def make() -> list[tuple[Any, Any]]:  # in TXS's order
            out = []
            for tx in TXS.values():
                model = nnx.Linear(d, k, rngs=nnx.Rngs(0))
                out.append((model, nnx.Optimizer(model, tx, wrt=nnx.Param)))
            return out

        made = nnx.eval_shape(make)
        _layers[(d, k)] = {s: Layer(*nnx.split(pair)) for s, pair in zip(TXS, made)}
    return _layers[(d, k)][structure]


def _values(case: sgdc_adapter.Case) -> dict[str, Any]:
    """The case's values by slot name: parameters, counter, hyperparameters, state."""
    if case.step >= 2**32:
        raise sgdc_adapter.RejectCase("NNX keeps the step counter as uint32; step must be < 2**32")
    values: dict[str, Any] = {"kernel": case.kernel, "bias": case.bias, "step": case.step,
                              "hyperparams.learning_rate": case.lr}
    o = case.optimizer
    if o is None:
        return values
    # The case's weight decay into its convention's slot, 0 into the other's.
    coupled = o.decay == "coupled"
    values["hyperparams.coupled_weight_decay"] = o.weight_decay if coupled else 0.0
    values["hyperparams.decoupled_weight_decay"] = 0.0 if coupled else o.weight_decay
    # Optimizer state left out (a fresh one) stays the layer's zeros, as optax
    # initialises it.
    if isinstance(o, sgdc_adapter.AdamOptimizer):
        for key in ADAM_HYPERPARAMETERS:
            values["hyperparams." + key] = getattr(o, key)
        if FIXED_EPS_ROOT is not None:
            values["hyperparams.eps_root"] = FIXED_EPS_ROOT
        for name in ("kernel", "bias"):
            for slot, field in (("mu.", "momentum_"), ("nu.", "second_moment_")):
                if getattr(case, field + name) is not None:
                    values[slot + name] = getattr(case, field + name)
        values["adam.count"] = min(case.step, INT32_MAX)
    else:
        values["hyperparams.momentum"] = o.momentum
        if case.momentum_kernel is not None and case.momentum_bias is not None:
            values["trace.kernel"] = case.momentum_kernel  # optax.trace's buffer
            values["trace.bias"] = case.momentum_bias
    return values


Key = tuple[int, int, int, Structure]
# Compiled train steps by (n, d, k, structure), each a Future of the compilation running
# (or done) on _compiler's threads.
_compiled: dict[Key, Future[Any]] = {}
_compiler = ThreadPoolExecutor(max_workers=os.cpu_count() or 1)
_shapes: set[tuple[int, int, int]] = set()  # (n, d, k) met so far


def _key(case: sgdc_adapter.Case) -> Key:
    return (case.n, case.d, case.k, _structure(case))


def _compile(key: Key, layer: Layer) -> Any:
    """The train step compiled for `key` from its layer's graph definition and the shapes
    of its state, x and y (what the step is compiled for: the values play no part)."""
    n, d, k, _ = key
    return train_step.lower(layer.graphdef, layer.abstract_state,
                            jax.ShapeDtypeStruct((n, d), jnp.float32),
                            jax.ShapeDtypeStruct((n, k), jnp.float32)).compile()


def _submit(key: Key) -> None:
    if key not in _compiled:
        _compiled[key] = _compiler.submit(_compile, key, _layer(*key[1:]))


def _compile_new_shapes(cases: list[sgdc_adapter.Case]) -> None:
    """Starts compiling the train steps `cases` need and do not have yet, in the cases'
    order, on the compiler's threads (XLA compiles outside the GIL): the first cases step
    while the later ones' programs compile. Then, for each shape new to the run, the
    other optimizer structures: a run meets nearly every structure at each of its shapes
    (46 of 48 pairs at seed 1), so they compile while these cases step."""
    new_shapes = []
    for case in cases:
        try:
            key = _key(case)
        except Exception:  # noqa: BLE001 - the case is answered with its error when stepped
            continue
        if key[:3] not in _shapes:
            _shapes.add(key[:3])
            new_shapes.append(key[:3])
        _submit(key)
    for shape in new_shapes:
        for structure in TXS:
            _submit((*shape, structure))


def _run(case: sgdc_adapter.Case) -> dict[str, Any]:
    key = _key(case)
    layer = _layer(*key[1:])
    state = layer.state(_values(case))
    loss, grads, new_state = _compiled[key].result()(layer.graphdef, state, case.x, case.y)
    new = layer.read(new_state)
    out = {
        "loss": np.asarray(loss),
        "kernel": np.asarray(new["kernel"]),
        "bias": np.asarray(new["bias"]),
        "grad_kernel": np.asarray(grads["kernel"][...]),
        "grad_bias": np.asarray(grads["bias"][...]),
        "step": int(new["step"]),
    }
    if isinstance(case.optimizer, sgdc_adapter.AdamOptimizer):
        for name in ("kernel", "bias"):
            out["momentum_" + name] = np.asarray(new["mu." + name])
            out["second_moment_" + name] = np.asarray(new["nu." + name])
    elif case.optimizer is not None:
        for name in ("kernel", "bias"):
            out["momentum_" + name] = np.asarray(new["trace." + name])
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


def main() -> None:
    global FIXED_EPS_ROOT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps-root", type=float, metavar="VALUE",
                        help="Adam with this fixed eps_root, declared without eps_root as "
                             "torch's step (the suite must reject this)")
    FIXED_EPS_ROOT = parser.parse_args().eps_root
    name = "flax-nnx" if FIXED_EPS_ROOT is None else f"flax-nnx-eps-root-{FIXED_EPS_ROOT:g}"
    try:
        serve(name)
    finally:  # compilations not started yet are dropped, not waited for, at the end
        _compiler.shutdown(wait=False, cancel_futures=True)


def serve(name: str) -> None:
    sgdc_adapter.serve(step_batch=step_batch, max_batch=MAX_BATCH, name=name,
                       version=flax.__version__, capabilities=("grads", "step_counter"),
                       subnormals="ftz", counter=("uint32", "wrap"),
                       momentum=sgdc_adapter.MomentumSupport(
                           dampening=False, nesterov=True, weight_decay=("coupled", "decoupled")),
                       adam=sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"),
                                                     eps_root=FIXED_EPS_ROOT is None))


if __name__ == "__main__":
    main()
