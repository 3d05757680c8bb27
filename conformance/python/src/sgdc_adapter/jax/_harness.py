"""The machinery behind `serve_nnx` and `serve_spmd` (see the package docstring).

Why it is built this way: a default run meets about a dozen shapes and up to five
optimizer structures, and at these sizes compiling, tracing and dispatching cost far
more than the step itself. So each (d, k) is traced once, abstractly (`nnx.eval_shape`:
no initialiser runs and no JAX operation is compiled per shape), only for the graph
definition and state layout of the user's model and optimizer; each (n, d, k, shards) is
compiled once, ahead of time, on a thread pool (XLA compiles in C++, outside the GIL)
while earlier cases step; and per case the compiled step is dispatched with host arrays
as the state's leaves and nothing else (`variable[...] = x` would dispatch one JAX
operation per value, `nnx.split` and `nnx.merge` per case cost more than the step).

One program serves every optimizer structure: the optimizer is `structures(...)`, which
holds each structure's own transformation (the user's chain under
optax.inject_hyperparams) and, in its state, the index of the one that steps. Its update
runs every chain and selects that one's updates (`jax.lax.select_n`: a selection, so
each result is that chain's own, never a blend of chains), and keeps every other chain's
state as it was. A program per structure compiled up to four per shape (48 in
flax_nnx_step.py's default run, where one per shape compiles 12); the chains cost next
to nothing to run beside each other at these sizes. Only the structures the declarations
allow are built (`served_structures`): each chain is compile time in every program. The
step returns only what is read back (the state of the structure that stepped, selected
likewise): under SPMD each output is gathered from the devices, and fewer outputs make a
smaller program, faster to compile.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NamedTuple

from . import quick_compile

quick_compile()  # before JAX first compiles: XLA reads its flags then
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

from .._codec import AdagradOptimizer, AdamOptimizer, Case, RejectCase  # noqa: E402

INT32_MAX = 2**31 - 1
UINT32_END = 2**32
# An optimizer structure: what changes the user's chain (the rest is hyperparameter
# state): the kind of step, and Nesterov, a Python bool that optax.trace branches on. Each
# is one chain of the one optimizer (`structures`), named in its state by STRUCTURE_NAMES.
Structure = tuple[str, bool]
STRUCTURES: tuple[Structure, ...] = (("sgd", False), ("momentum", False), ("momentum", True),
                                     ("adam", False), ("adagrad", False))
STRUCTURE_NAMES: dict[Structure, str] = {("sgd", False): "sgd", ("momentum", False): "momentum",
                                         ("momentum", True): "nesterov", ("adam", False): "adam",
                                         ("adagrad", False): "adagrad"}
DECAYS = ("weight_decay", "coupled_weight_decay", "decoupled_weight_decay")
# The hyperparameters of each kind, injected as optimizer state (optax.inject_hyperparams)
# so that one compiled step serves every value.
HYPERPARAMETERS: dict[str, tuple[str, ...]] = {
    "sgd": ("learning_rate",),
    "momentum": ("learning_rate", "momentum", "dampening", *DECAYS, "fresh"),
    "adam": ("learning_rate", "b1", "b2", "eps", "eps_root", *DECAYS, "fresh"),
    "adagrad": ("learning_rate", "eps", "eps_root", "initial_accumulator_value", *DECAYS),
}
# The slots every structure shares: the rest are named "STRUCTURE/SLOT".
SHARED_SLOTS = ("kernel", "bias", "step", "structure")
ALL_HYPERPARAMETERS = tuple(dict.fromkeys(h for names in HYPERPARAMETERS.values() for h in names))

ModelFn = Callable[[int, int, Any], Any]
OptimizerFn = Callable[["CaseOptimizer"], Any]
TrainStep = Callable[[Any, Any, Any, Any], Any]
MeshFn = Callable[[int], Any]


@dataclass(frozen=True)
class CaseOptimizer:
    """The case's optimizer as `optimizer_fn` sees it. `kind` ("sgd", "momentum", "adam" or
    "adagrad") and `nesterov` are Python values: each choice is its own chain (all of
    them live in the one compiled step, which selects the case's). The numbers are JAX
    arrays, optax.inject_hyperparams' state, so that one compiled step serves every
    value: pass them to optax as they are, never branch on them in Python. Those of
    other kinds are None. `weight_decay` is the case's weight decay;
    `coupled_weight_decay` and `decoupled_weight_decay` are it under its convention and
    0 under the other (coupled: added to the gradient, where it enters the buffer or the
    moments; decoupled: added to the direction), so that one chain serves both. `fresh`
    (momentum and Adam) is 1.0 where the case's optimizer state is fresh (the first
    step: no buffer or moments yet, loaded as zeros, optax's initial state) and 0.0
    where the case carries it: torch's momentum starts its buffer as the gradient
    itself, undampened (`dampened_trace`). Adagrad's `initial_accumulator_value` is the
    fresh sum of squares (the kit loads the case's sum, that value where the state is
    fresh); its `eps_root` is optax.adagrad's `eps`, inside the root, and `eps` torch's,
    outside."""

    kind: str
    nesterov: bool = False
    learning_rate: Any = None
    momentum: Any = None
    dampening: Any = None
    weight_decay: Any = None
    coupled_weight_decay: Any = None
    decoupled_weight_decay: Any = None
    b1: Any = None
    b2: Any = None
    eps: Any = None
    eps_root: Any = None
    initial_accumulator_value: Any = None
    fresh: Any = None


def optax_optimizer(o: CaseOptimizer) -> Any:
    """The default `optimizer_fn`: optax's own transformations, each bit for bit the
    library's step. Plain SGD: `optax.sgd(lr)`. Momentum: `chain(add_decayed_weights(
    coupled), trace(mu, nesterov), add_decayed_weights(decoupled),
    scale_by_learning_rate(lr))`, which is `chain(add_decayed_weights(wd), sgd(lr, mu,
    nesterov))` (torch.optim.SGD's coupled decay) with decoupled = 0 and the decay added
    outside the buffer with coupled = 0 (an added 0 * p is an exact zero). Adam: the same
    with `scale_by_adam(b1, b2, eps, eps_root)` for `trace`: `optax.adamw` (decoupled) and
    `chain(add_decayed_weights(wd), adam(...))` (coupled, torch.optim.Adam's). Adagrad:
    the same with `scale_by_rss(initial_accumulator_value, eps_root)`, which is
    `optax.adagrad` (its epsilon inside the root: declare `AdagradSupport(eps_root=True)`).
    optax has no dampening: serve without it."""
    if o.kind == "sgd":
        return optax.sgd(o.learning_rate)
    if o.kind == "momentum":
        direction = optax.trace(decay=o.momentum, nesterov=o.nesterov)
    elif o.kind == "adagrad":
        direction = optax.scale_by_rss(initial_accumulator_value=o.initial_accumulator_value,
                                       eps=o.eps_root)
    else:
        direction = optax.scale_by_adam(b1=o.b1, b2=o.b2, eps=o.eps, eps_root=o.eps_root)
    return optax.chain(optax.add_decayed_weights(o.coupled_weight_decay), direction,
                       optax.add_decayed_weights(o.decoupled_weight_decay),
                       optax.scale_by_learning_rate(o.learning_rate))


def dampened_trace(decay: Any, dampening: Any, nesterov: bool = False,
                   fresh: Any = 0.0) -> Any:
    """optax.trace with torch.optim.SGD's dampening, for an `optimizer_fn` that serves it
    (optax has none): the buffer becomes `decay * buf + (1 - dampening) * g`, except where
    `fresh` is nonzero (pass `o.fresh`: torch's first step copies the gradient into a new
    buffer, undampened) or `decay` is 0 (torch keeps no buffer there), where it becomes
    `g`; the direction is the buffer, or `g + decay * buf` with Nesterov. Its state is
    optax.TraceState, so the kit loads and reports the buffer as optax.trace's. With
    `dampening` 0 it is optax.trace's step (a fresh optax buffer is zeros: 0 * decay + g
    is g)."""

    def init(params: Any) -> Any:
        return optax.TraceState(trace=jax.tree_util.tree_map(jnp.zeros_like, params))

    def update(updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        del params
        restart = (jnp.asarray(fresh) != 0) | (jnp.asarray(decay) == 0)
        trace = jax.tree_util.tree_map(
            lambda g, buf: jnp.where(restart, g, decay * buf + (1 - dampening) * g),
            updates, state.trace)
        if nesterov:
            updates = jax.tree_util.tree_map(lambda g, buf: g + decay * buf, updates, trace)
        else:
            updates = trace
        return updates, optax.TraceState(trace=trace)

    return optax.GradientTransformation(init, update)


class StructuresState(NamedTuple):
    """The state of `structures`: `structure`, the index (int32) of the chain that steps,
    which each case sets; `by_structure`, each chain's own state by structure name."""

    structure: Any
    by_structure: dict[str, Any]


def structures(chains: Mapping[str, Any]) -> Any:
    """One optax transformation serving several chains (name -> GradientTransformation),
    so that one compiled step serves every optimizer structure. Its update runs every
    chain and selects the updates of the one its state's `structure` indexes (in
    `chains`' order) with `jax.lax.select_n`, which selects and never mixes values: the
    result is that chain's own. Each other chain's state is kept as it was, so the state
    a chain carries across steps (a schedule's, the user's own) advances only on the
    steps of its structure, as with one optimizer per structure."""
    names = list(chains)

    def init(params: Any) -> StructuresState:
        return StructuresState(jnp.zeros((), jnp.int32),
                               {name: chains[name].init(params) for name in names})

    def update(updates: Any, state: StructuresState,
               params: Any = None) -> tuple[Any, StructuresState]:
        index = state.structure
        results = [chains[name].update(updates, state.by_structure[name], params)
                   for name in names]
        chosen = jax.tree_util.tree_map(lambda *u: jax.lax.select_n(index, *u),
                                        *[updates for updates, _ in results])
        kept = {name: jax.tree_util.tree_map(
                    lambda new, old, i=i: jnp.where(index == i, new, old), new_state,
                    state.by_structure[name])
                for i, (name, (_, new_state)) in enumerate(zip(names, results))}
        return chosen, StructuresState(index, kept)

    return optax.GradientTransformation(init, update)


def default_model(d: int, k: int, rngs: Any) -> Any:
    """The default `model_fn`: a bare `nnx.Linear(d, k)`."""
    return nnx.Linear(d, k, rngs=rngs)


def mse_train_step(model: Any, optimizer: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """The default `train_step`: value_and_grad of the mean squared error over all N*K
    elements, then `optimizer.update`. Returns (loss, grads)."""
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss, grads


def _names(path: Sequence[Any]) -> list[Any]:
    """A JAX key path as plain names, without NNX's trailing 'value'."""
    keys = [getattr(k, "key", getattr(k, "name", getattr(k, "idx", k))) for k in path]
    return [k for k in keys if k != "value"]


def find_linear(model: Any) -> tuple[Any, ...]:
    """The path of the one `nnx.Linear` in `model`; ValueError naming the problem
    otherwise (none, several, no bias)."""
    if not isinstance(model, nnx.Module):
        raise TypeError(f"model_fn must return an nnx.Module, got {type(model).__name__}")
    found = [(tuple(path), node) for path, node in nnx.iter_graph(model)
             if isinstance(node, nnx.Linear)]
    if len(found) != 1:
        where = ", ".join("/".join(map(str, p)) or "(the model itself)" for p, _ in found)
        raise ValueError(f"model_fn's {type(model).__name__} holds {len(found)} nnx.Linear "
                         f"layers{': ' + where if where else ''}; the step is that of exactly one")
    path, linear = found[0]
    if linear.bias is None:
        raise ValueError("the model's nnx.Linear has no bias (use_bias=False); the step's "
                         "layer is biased")
    return path


class Layer:
    """One (d, k): the graph definition of the user's model with its nnx.Optimizer over
    `structures` of every chain the user's optimizer_fn builds, and the layout of their
    state, the pytree NNX's functional API carries from step to step. `slots` names the
    leaves a case sets and reads: "kernel", "bias", "step" (NNX's counter), "structure"
    (the index of the chain that steps), and per structure ("sgd", "momentum",
    "nesterov", "adam") "NAME/hyperparams.H", "NAME/count" (every optax counter: the
    steps taken), "NAME/trace.kernel" (optax.trace's buffer), "NAME/mu.kernel" and
    "NAME/nu.kernel" (Adam's moments), likewise for the bias. `served` are the structure
    names in `structures`' order; `rejected` says, for each structure the user's
    optimizer_fn cannot build, why. `current` holds the leaves every other leaf starts
    the next step from: the state a training loop carries across steps."""

    def __init__(self, graphdef: Any, abstract_state: Any, linear: tuple[Any, ...],
                 concrete: Callable[[], Any], served: Sequence[str] = (),
                 rejected: Mapping[str, str] | None = None) -> None:
        self.graphdef = graphdef
        self.abstract_state = abstract_state
        self.served = list(served)
        self.rejected = dict(rejected or {})
        with_paths, self.treedef = jax.tree_util.tree_flatten_with_path(abstract_state)
        self.dtypes = [leaf.dtype for _, leaf in with_paths]
        self.slots: dict[str, list[int]] = {}
        carried = []
        for index, (path, _) in enumerate(with_paths):
            name = _slot(_names(path), list(linear))
            if name is None:
                carried.append(index)
            else:
                self.slots.setdefault(name, []).append(index)
        for name, indices in self.slots.items():
            if len(indices) > 1 and name.split("/")[-1] != "count":
                raise ValueError(f"the optimizer's state holds {len(indices)} leaves for "
                                 f"{name}; the kit reads one")
        self.carried = carried
        self.shapes = [leaf.shape for _, leaf in with_paths]
        # The new state's leaves a step returns: those read back or carried. The state a
        # case reports (its structure's buffer or moments) comes back selected: `reported`.
        self.returned = frozenset(carried) | {
            index for name in ("kernel", "bias", "step") for index in self.slots.get(name, ())}
        # Per reported field, each served structure's leaf (None where it keeps none).
        self.reported: dict[str, list[int | None]] = {}
        for field, slots in REPORTED.items():
            leaves = [self.slots.get(f"{structure}/{slots[_kind(structure)]}", [None])[0]
                      if slots.get(_kind(structure)) else None for structure in self.served]
            if any(index is not None for index in leaves):
                self.reported[field] = leaves
        # Host zeros for the leaves every case sets (never written to: cases share them);
        # the user's own state starts from its real initial values, then what steps make.
        self.current: list[Any] = [np.zeros(leaf.shape, leaf.dtype) if index not in carried
                                   else None for index, (_, leaf) in enumerate(with_paths)]
        if carried:
            initial = jax.tree_util.tree_leaves(concrete())
            for index in carried:
                self.current[index] = initial[index]

    def state(self, values: Mapping[str, Any], structure: str | None = None) -> Any:
        """The state pytree with `values` (by slot name; those not shared by every
        structure are `structure`'s) and the carried leaves elsewhere; the structure
        index set to `structure`'s."""
        leaves = list(self.current)
        if structure is not None:
            values = {**values, "structure": self.served.index(structure)}
        for name, value in values.items():
            slot = name if name in SHARED_SLOTS or structure is None else f"{structure}/{name}"
            for index in self.slots.get(slot, ()):
                leaves[index] = np.asarray(value, dtype=self.dtypes[index])
        return jax.tree_util.tree_unflatten(self.treedef, leaves)

    def keep(self, leaves: Sequence[Any]) -> None:
        """Carry the new state's own leaves (those no case sets) to the next step."""
        for index in self.carried:
            self.current[index] = leaves[index]

    def index(self, name: str, structure: str | None = None) -> int:
        """The leaf of slot `name` (`structure`'s own unless shared)."""
        slot = name if name in SHARED_SLOTS or structure is None else f"{structure}/{name}"
        if slot not in self.slots:
            raise ValueError(f"the optimizer's state holds no {name} (the kit reports the "
                             f"{_STATE_NAMES[name.split('.')[0]]} from it)")
        return self.slots[slot][0]

    def read(self, leaves: Sequence[Any], name: str, structure: str | None = None) -> Any:
        return leaves[self.index(name, structure)]


# The optimizer state a case reports, by result field: the slot each kind keeps it in.
REPORTED: dict[str, dict[str, str]] = {
    "momentum_kernel": {"momentum": "trace.kernel", "adam": "mu.kernel"},
    "momentum_bias": {"momentum": "trace.bias", "adam": "mu.bias"},
    "second_moment_kernel": {"adam": "nu.kernel", "adagrad": "sum_of_squares.kernel"},
    "second_moment_bias": {"adam": "nu.bias", "adagrad": "sum_of_squares.bias"},
}


def _kind(structure: str) -> str:
    """The kind of step of a structure name."""
    return {"nesterov": "momentum"}.get(structure, structure)


_STATE_NAMES = {"trace": "momentum buffer, optax.trace's TraceState.trace",
                "mu": "first moment, optax.scale_by_adam's mu",
                "nu": "second moment, optax.scale_by_adam's nu",
                "sum_of_squares": "sum of squares, optax.scale_by_rss's sum_of_squares"}
# The state slots of the chains: each is laid out as its parameter.
STATE_SLOTS = tuple(_STATE_NAMES)


def _slot(keys: list[Any], linear: list[Any]) -> str | None:
    """The slot of the state leaf at `keys` (from `nnx.split((model, optimizer))`, e.g.
    [1, 'opt_state', 'by_structure', 'momentum', 'inner_state', 1, 'trace', 'kernel']:
    "momentum/trace.kernel"), or None for one the user's step carries itself."""
    if keys[0] == 0:
        rest = keys[1:]
        if rest[:-1] == linear and rest[-1] in ("kernel", "bias"):
            return str(rest[-1])
        return None
    if keys == [1, "step"]:
        return "step"
    if keys == [1, "opt_state", "structure"]:
        return "structure"
    if keys[:3] == [1, "opt_state", "by_structure"] and len(keys) > 4:
        name = _chain_slot(keys[4:], linear)
        return None if name is None else f"{keys[3]}/{name}"
    return _chain_slot(keys, linear)


def _chain_slot(keys: list[Any], linear: list[Any]) -> str | None:
    """The slot of a leaf at `keys` within one chain's state."""
    for i, key in enumerate(keys):
        if key == "hyperparams" and i + 1 < len(keys) and keys[i + 1] in ALL_HYPERPARAMETERS:
            return f"hyperparams.{keys[i + 1]}"
        if key in STATE_SLOTS:
            rest = keys[i + 1:]
            if rest[:-1] == linear and rest[-1] in ("kernel", "bias"):
                return f"{key}.{rest[-1]}"
    if keys[-1] == "count":
        return "count"
    return None


def _describe(structure: Structure) -> str:
    return {"sgd": "plain SGD", "momentum": "momentum (Nesterov)" if structure[1] else
            "momentum (heavy ball)", "adam": "Adam", "adagrad": "Adagrad"}[structure[0]]


def _structure(case: Case) -> Structure:
    o = case.optimizer
    if o is None:
        return ("sgd", False)
    if isinstance(o, AdamOptimizer):
        return ("adam", False)
    if isinstance(o, AdagradOptimizer):
        return ("adagrad", False)
    return ("momentum", bool(o.nesterov))


def _values(case: Case) -> dict[str, Any]:
    """The case's values by slot name: parameters, counters, hyperparameters, state.
    Optimizer state the case leaves out (fresh) is zeros, as optax initialises it."""
    # NNX keeps its counter as a uint32 that wraps: after `step` steps a training loop
    # holds step mod 2**32 (a step past 2**32 comes only where the counter is not
    # reported, not declared uint32). optax keeps its counters as int32 saturating at
    # 2**31 - 1 (safe_increment); from there on t = 2**31 - 1 rather than step + 1, and
    # b**t rounds to 0 either way.
    values: dict[str, Any] = {"kernel": case.kernel, "bias": case.bias,
                              "step": case.step % UINT32_END,
                              "count": min(case.step, INT32_MAX),
                              "hyperparams.learning_rate": case.lr}
    o = case.optimizer
    if o is None:
        return values
    coupled = o.decay == "coupled"
    values["hyperparams.weight_decay"] = o.weight_decay
    values["hyperparams.coupled_weight_decay"] = o.weight_decay if coupled else 0.0
    values["hyperparams.decoupled_weight_decay"] = 0.0 if coupled else o.weight_decay
    values["hyperparams.fresh"] = 1.0 if case.fresh_state else 0.0
    zeros = {"kernel": np.zeros_like(case.kernel), "bias": np.zeros_like(case.bias)}
    if isinstance(o, AdagradOptimizer):
        for key in ("eps", "eps_root", "initial_accumulator_value"):
            values["hyperparams." + key] = getattr(o, key)
        for name in ("kernel", "bias"):
            s = getattr(case, "second_moment_" + name)
            values["sum_of_squares." + name] = (
                np.full_like(zeros[name], o.initial_accumulator_value) if s is None else s)
        return values
    if isinstance(o, AdamOptimizer):
        for key in ("b1", "b2", "eps", "eps_root"):
            values["hyperparams." + key] = getattr(o, key)
        for name in ("kernel", "bias"):
            m, v = getattr(case, "momentum_" + name), getattr(case, "second_moment_" + name)
            values["mu." + name] = zeros[name] if m is None else m
            values["nu." + name] = zeros[name] if v is None else v
    else:
        values["hyperparams.momentum"] = o.momentum
        values["hyperparams.dampening"] = o.dampening
        for name in ("kernel", "bias"):
            buffer = getattr(case, "momentum_" + name)
            values["trace." + name] = zeros[name] if buffer is None else buffer
    return values


@dataclass(frozen=True)
class Sharding:
    """How the SPMD harness places a case on `num_shards` devices: `mesh_fn(S)` the
    user's mesh, `rules` a PartitionSpec for "kernel" and "bias" (None: the
    `nnx.with_partitioning` annotations of the model's parameters), `batch` the
    PartitionSpec of x and y (None: rows over the mesh's first axis); `layout`: report
    each device's part ("shard_layout")."""

    mesh_fn: MeshFn
    rules: Mapping[str, Any] | None
    batch: Any
    layout: bool


def one_axis_mesh(shards: int) -> Any:
    """The default mesh: the first `shards` devices on one axis, "shards"."""
    return Mesh(np.array(jax.devices()[:shards]), ("shards",))


class Harness:
    """The user's model, optimizer and train step, compiled and served case by case.
    `step_batch` is the kit's `step_batch`; `close()` drops compilations not started."""

    def __init__(self, model_fn: ModelFn | None, optimizer_fn: OptimizerFn | None,
                 train_step: TrainStep | None, sharding: Sharding | None = None,
                 reject_dampening: bool = False,
                 structures: Sequence[Structure] | None = None) -> None:
        for what, fn in (("model_fn", model_fn), ("optimizer_fn", optimizer_fn),
                         ("train_step", train_step)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{what} must be callable, got {fn!r}")
        self.model_fn = model_fn or default_model
        self.optimizer_fn = optimizer_fn or optax_optimizer
        self.train_step = train_step or mse_train_step
        self.sharding = sharding
        self.reject_dampening = reject_dampening
        # Only the structures a case can have: each chain adds to every program's compile.
        self.structures = tuple(STRUCTURES if structures is None else
                                (s for s in STRUCTURES if s in structures))
        self.txs = {s: self._transformation(s) for s in self.structures}
        self._layers: dict[tuple[int, int], Layer] = {}
        self._optimizers: dict[tuple[Structure, ...], Any] = {}
        self._meshes: dict[int, Any] = {}
        self._spec_cache: dict[tuple[int, int], Any] = {}
        self._compiled: dict[tuple[Any, ...], Future[Any]] = {}
        self._pool = ThreadPoolExecutor(max_workers=os.cpu_count() or 1)

    def _transformation(self, structure: Structure) -> Any:
        kind, nesterov = structure
        names = HYPERPARAMETERS[kind]
        user = self.optimizer_fn

        def factory(**hyperparameters: Any) -> Any:
            tx = user(CaseOptimizer(kind=kind, nesterov=nesterov, **hyperparameters))
            if not isinstance(tx, optax.GradientTransformation):
                raise TypeError(f"optimizer_fn returned {type(tx).__name__} for a {kind} case; "
                                f"it must return an optax GradientTransformation")
            return tx

        # inject_hyperparams binds its keywords to the factory's signature.
        factory.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
            [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in names])
        return optax.inject_hyperparams(factory)(**dict.fromkeys(names, 0.0))

    def layer(self, d: int, k: int) -> Layer:
        """The layer of (d, k), made once: the model and one optimizer over `structures`
        of every chain the user's optimizer_fn builds, traced abstractly. A chain whose
        init or update raises while traced is left out, and the error kept to answer its
        cases with (`Layer.rejected`): a user who wrote AdamW alone still serves it."""
        if (d, k) not in self._layers:
            served: list[Structure] = []
            rejected: dict[str, str] = {}

            def make() -> tuple[Any, Any]:
                model = self.model_fn(d, k, nnx.Rngs(0))
                find_linear(model)
                params = nnx.as_pure(nnx.state(model, nnx.Param))
                for s in self.structures:
                    try:
                        tx = self.txs[s]
                        tx.update(params, tx.init(params), params)
                    except Exception as e:  # noqa: BLE001 - its cases are answered with it
                        rejected[STRUCTURE_NAMES[s]] = (
                            f"optimizer_fn cannot make the {_describe(s)} step: "
                            f"{type(e).__name__}: {e}")
                    else:
                        served.append(s)
                return model, nnx.Optimizer(model, self._optimizer(served), wrt=nnx.Param)

            # Sharding annotations stay metadata here: the harness places each case on
            # its own mesh.
            with nnx.use_eager_sharding(False):
                made = nnx.eval_shape(make)
            linear = find_linear(made[0])

            def concrete() -> Any:
                with nnx.use_eager_sharding(False):
                    model = self.model_fn(d, k, nnx.Rngs(0))
                    return nnx.state((model, nnx.Optimizer(model, self._optimizer(served),
                                                           wrt=nnx.Param)))
            self._layers[(d, k)] = Layer(*nnx.split(made), linear, concrete,
                                         [STRUCTURE_NAMES[s] for s in served], rejected)
        return self._layers[(d, k)]

    def _optimizer(self, served: Sequence[Structure]) -> Any:
        """`structures` of the chains of `served`, made once per set of structures."""
        key = tuple(served)
        if key not in self._optimizers:
            self._optimizers[key] = structures({STRUCTURE_NAMES[s]: self.txs[s] for s in key})
        return self._optimizers[key]

    def mesh(self, shards: int) -> Any:
        assert self.sharding is not None
        if shards not in self._meshes:
            if shards > jax.device_count():
                raise RejectCase(f"at most {jax.device_count()} shards (devices)")
            mesh = self.sharding.mesh_fn(shards)
            if not isinstance(mesh, Mesh) or mesh.size != shards:
                raise ValueError(f"mesh_fn({shards}) must return a jax.sharding.Mesh of "
                                 f"{shards} devices, got {mesh!r}")
            self._meshes[shards] = mesh
        return self._meshes[shards]

    def _key(self, case: Case) -> tuple[int, int, int, int]:
        """The program of `case`: its (n, d, k, shards), whatever its structure."""
        if self.reject_dampening and getattr(case.optimizer, "dampening", 0) != 0:
            raise RejectCase("optax's momentum (optax.trace) has no dampening")
        shards = case.num_shards if self.sharding is not None else 1
        return (case.n, case.d, case.k, shards)

    def _step(self, graphdef: Any, state: Any, x: Any, y: Any, layer: Layer,
              specs: Any = None) -> Any:
        """The jitted step: the user's train step on the merged model and optimizer;
        returns the loss, the gradients of the kernel and bias (None without), the new
        state's leaves, those not in `layer.returned` as None (what each case sets anew),
        and the reported state of the structure that stepped, selected from the served
        structures' (`layer.reported`): a handful of outputs, where every chain's state
        would be a dozen, each gathered from the devices under SPMD (a smaller program,
        faster to compile). With sharding, the state and batch are constrained to the
        user's placements on entry and the new state on exit."""
        if specs is not None:
            state_specs, batch = specs
            state = _constrain_leaves(state, state_specs)
            x, y = _constrain(x, batch), _constrain(y, batch)
        model, optimizer = nnx.merge(graphdef, state)
        out = self.train_step(model, optimizer, x, y)
        loss, grads = out if isinstance(out, tuple) else (out, None)
        new_state = nnx.state((model, optimizer))
        if jax.tree_util.tree_structure(new_state) != jax.tree_util.tree_structure(state):
            raise ValueError("train_step changed the structure of the model's or the "
                             "optimizer's state")
        if specs is not None:
            new_state = _constrain_leaves(new_state, state_specs)
        linear = find_linear(model)
        found: dict[str, Any] = {}
        if grads is not None:
            for path, leaf in jax.tree_util.tree_flatten_with_path(grads)[0]:
                names = _names(path)
                if names[:-1] == list(linear) and names[-1] in ("kernel", "bias"):
                    found[str(names[-1])] = leaf
            if set(found) != {"kernel", "bias"}:
                raise ValueError("train_step's gradients hold no kernel and bias of the "
                                 "model's nnx.Linear (return (loss, grads) as "
                                 "nnx.value_and_grad gives them)")
        leaves = jax.tree_util.tree_leaves(new_state)
        reported = {}
        if layer.reported:
            structure = leaves[layer.slots["structure"][0]]
            for field, indices in layer.reported.items():
                like = next(leaves[i] for i in indices if i is not None)
                candidates = [jnp.zeros_like(like) if i is None else leaves[i] for i in indices]
                if len({c.dtype for c in candidates}) == 1:  # select, never convert
                    reported[field] = jax.lax.select_n(structure, *candidates)
                else:
                    reported[field] = candidates
        return (jnp.asarray(loss), found.get("kernel"), found.get("bias"),
                [leaf if index in layer.returned else None
                 for index, leaf in enumerate(leaves)], reported)

    def _specs(self, layer: Layer, shards: int) -> Any:
        """NamedShardings of the state's leaves and of the batch on the mesh of `shards`."""
        key = (id(layer), shards)
        if key not in self._spec_cache:
            self._spec_cache[key] = self._make_specs(layer, shards)
        return self._spec_cache[key]

    def _make_specs(self, layer: Layer, shards: int) -> Any:
        assert self.sharding is not None
        mesh = self.mesh(shards)
        rules = self.sharding.rules
        if rules is None:
            annotated = nnx.get_partition_spec(layer.abstract_state)
            leaves = jax.tree_util.tree_leaves(annotated, is_leaf=lambda v: isinstance(
                v, PartitionSpec) or v is None)
            by_slot = {name: leaves[indices[0]] for name, indices in layer.slots.items()
                       if name in ("kernel", "bias")}
        else:
            unknown = set(rules) - {"kernel", "bias"}
            if unknown:
                raise ValueError(f"rules name {sorted(unknown)}; they place 'kernel' and 'bias'")
            by_slot = {name: rules.get(name, PartitionSpec()) for name in ("kernel", "bias")}
        specs: list[Any] = [None] * len(layer.dtypes)
        for name, indices in layer.slots.items():
            param = name.split(".")[-1]
            spec = by_slot.get(param) if name in ("kernel", "bias") or name.split("/")[-1].split(
                ".")[0] in STATE_SLOTS else PartitionSpec()
            for index in indices:
                specs[index] = NamedSharding(mesh, spec or PartitionSpec())
        batch = self.sharding.batch
        if batch is None:
            batch = PartitionSpec(mesh.axis_names[0])
        return specs, NamedSharding(mesh, batch)

    def _compile(self, key: tuple[Any, ...], layer: Layer) -> Any:
        """The step compiled for `key` from the layer's graph definition and the shapes of
        its state, x and y (the values play no part)."""
        n, d, k, shards = key
        args: list[Any] = [layer.graphdef, layer.abstract_state,
                           jax.ShapeDtypeStruct((n, d), jnp.float32),
                           jax.ShapeDtypeStruct((n, k), jnp.float32)]
        if self.sharding is None:
            return jax.jit(lambda g, s, x, y: self._step(g, s, x, y, layer)).lower(
                *args).compile()
        specs = self._specs(layer, shards)
        fn = jax.jit(lambda g, s, x, y: self._step(g, s, x, y, layer, specs))
        with jax.set_mesh(self.mesh(shards)):
            return fn.lower(*args).compile()

    def _submit(self, key: tuple[int, int, int, int]) -> None:
        if key not in self._compiled:
            layer = self.layer(key[1], key[2])
            if self.sharding is not None:
                self.mesh(key[3])
            self._compiled[key] = self._pool.submit(self._compile, key, layer)

    def compiled(self, key: tuple[int, int, int, int]) -> Any:
        """The compiled step of (n, d, k, shards), compiling it if no case has yet."""
        self._submit(key)
        return self._compiled[key].result()

    @property
    def programs(self) -> list[tuple[int, int, int, int]]:
        """The (n, d, k, shards) compiled or being compiled so far: one program each,
        serving every optimizer structure."""
        return list(self._compiled)

    def hlo(self, n: int, d: int, k: int, shards: int = 1) -> str:
        """The compiled (for SPMD, partitioned) HLO module of the step of (n, d, k,
        shards) as text: what a test reads the collectives from."""
        return str(self.compiled((n, d, k, shards)).as_text())

    def precompile(self, cases: Sequence[Case]) -> None:
        """Starts compiling the steps `cases` need, in their order, each shape once."""
        for case in cases:
            try:
                self._submit(self._key(case))
            except Exception:  # noqa: BLE001 - the case is answered with its error when stepped
                continue

    def run(self, case: Case) -> dict[str, Any]:
        """One case: its state loaded into the model and optimizer of its shape, the
        compiled step, the outputs read back."""
        key = self._key(case)
        layer = self.layer(case.d, case.k)
        structure = _structure(case)
        name = STRUCTURE_NAMES[structure]
        if name in layer.rejected:
            raise RejectCase(layer.rejected[name])
        if structure not in self.structures:
            raise RejectCase(f"a {_describe(structure)} step, which the harness was not "
                             f"declared to serve")
        state = layer.state(_values(case), name)
        loss, grad_kernel, grad_bias, leaves, reported = self.compiled(key)(
            layer.graphdef, state, case.x, case.y)
        layer.keep(leaves)
        out: dict[str, Any] = {"loss": np.asarray(loss),
                               "kernel": np.asarray(layer.read(leaves, "kernel")),
                               "bias": np.asarray(layer.read(leaves, "bias")),
                               "step": int(layer.read(leaves, "step"))}
        if grad_kernel is not None:
            out["grad_kernel"], out["grad_bias"] = np.asarray(grad_kernel), np.asarray(grad_bias)
        kind = structure[0]
        for field, slots in REPORTED.items():
            if kind in slots:
                layer.index(slots[kind], name)  # says so where the chain keeps no such state
                value = reported[field]
                if isinstance(value, list):  # dtypes differ among the structures
                    value = value[layer.served.index(name)]
                out[field] = np.asarray(value)
        if self.sharding is not None and self.sharding.layout:
            out["shards"] = self._layout(layer, leaves, kind, name, key[3])
        return out

    def _layout(self, layer: Layer, leaves: Sequence[Any], kind: str, structure: str,
                shards: int) -> list[dict[str, int]]:
        """Per mesh device, the kernel and bias elements of the parameters and of the
        optimizer's state that the step's shardings give it. XLA pads a dimension that
        does not divide: its parts are ceil(size / parts) long, the last ones shorter
        or empty. (JAX returns such arrays replicated, so the parts are read from the
        shardings the step runs under, not from the returned arrays.)"""
        mesh = self.mesh(shards)
        specs, _ = self._specs(layer, shards)
        layout = [dict.fromkeys(("kernel", "bias"), 0) for _ in range(mesh.size)]
        # The state slots the kind keeps, as REPORTED names them: "trace.", "mu.", ...
        states = [slots[kind].removesuffix("kernel") for field, slots in REPORTED.items()
                  if field.endswith("_kernel") and kind in slots]
        if states:
            for part in layout:
                part.update(state_kernel=0, state_bias=0)
        for prefix in ("", *states):
            for name in ("kernel", "bias"):
                index = layer.index(prefix + name, structure)
                field = ("state_" if prefix else "") + name
                held = _held(layer.shapes[index], specs[index].spec, mesh)
                for part, count in zip(layout, held):
                    part[field] += count
        return layout

    def step_batch(self, cases: list[Case]) -> list[dict[str, Any] | Exception]:
        self.precompile(cases)
        out: list[dict[str, Any] | Exception] = []
        for case in cases:
            try:
                out.append(self.run(case))
            except Exception as e:  # noqa: BLE001 - answers this case alone
                out.append(e)
        return out

    def close(self) -> None:
        """Compilations not started yet are dropped, not waited for."""
        self._pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> Harness:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _constrain(value: Any, sharding: Any) -> Any:
    return value if sharding is None else jax.lax.with_sharding_constraint(value, sharding)


def _constrain_leaves(state: Any, shardings: Sequence[Any]) -> Any:
    """`state` with each leaf constrained to its sharding (None: left to XLA)."""
    leaves, treedef = jax.tree_util.tree_flatten(state)
    return jax.tree_util.tree_unflatten(treedef, [_constrain(leaf, sharding) for leaf, sharding
                                                  in zip(leaves, shardings, strict=True)])


def _held(shape: Sequence[int], spec: Any, mesh: Any) -> list[int]:
    """Elements of an array of `shape` under `spec` that each device of `mesh` holds
    (in `mesh.devices.flat` order), padded as XLA pads an uneven dimension."""
    sizes = dict(zip(mesh.axis_names, mesh.devices.shape))
    positions = list(np.ndindex(*mesh.devices.shape))
    out = []
    for position in positions:
        at = dict(zip(mesh.axis_names, position))
        count = 1
        for dim, size in enumerate(shape):
            axes = spec[dim] if dim < len(spec) else None
            axes = () if axes is None else (axes,) if isinstance(axes, str) else tuple(axes)
            parts, index = 1, 0
            for axis in axes:  # major to minor
                parts, index = parts * sizes[axis], index * sizes[axis] + at[axis]
            chunk = -(-size // parts)
            count *= max(0, min(chunk, size - index * chunk))
        out.append(count)
    return out
