"""Flax NNX and JAX SPMD harnesses: you give the pieces you own, the kit does the rest.

    from sgdc_adapter.jax import serve_nnx

    serve_nnx(model_fn, optimizer_fn, train_step=None, *, name="flax-nnx", version=None,
              max_batch=32, **declarations)

- `model_fn(d, k, rngs)` returns your `nnx.Module`, holding exactly one biased
  `nnx.Linear(d, k)` (anywhere inside; the kit finds it, and says so when there is none
  or more than one). Default: a bare `nnx.Linear`.
- `optimizer_fn(o)` returns your optax `GradientTransformation` for the case's optimizer
  `o`, a `CaseOptimizer`: `o.kind` ("sgd", "momentum", "adam", "adagrad") and `o.nesterov` are
  Python values, the numbers (`o.learning_rate`, `o.momentum`, `o.dampening`, `o.b1`,
  `o.b2`, `o.eps`, `o.eps_root`, `o.initial_accumulator_value`, `o.weight_decay`,
  `o.coupled_weight_decay` / `o.decoupled_weight_decay`, and `o.fresh`, 1 where the
  case's state is fresh) are arrays of optax.inject_hyperparams' state, so that one
  compiled step serves every value. It is called once for each structure the
  declarations allow (plain SGD, heavy ball, Nesterov, Adam, Adagrad; only those, since
  each is one more chain to compile in every program): where it raises, that chain is
  left out and its cases are answered with a RejectCase naming the error, the others
  served (a user who wrote AdamW alone declares `recipe={"optimizers": ["adam"]}`, else
  the plain SGD cases that always come are rejected). Default: `optax_optimizer`,
  optax's own chains, each bit for bit the library's step (optax.sgd; trace for
  momentum; adamw and coupled Adam; scale_by_rss for optax.adagrad), declared with
  Nesterov, both weight decay conventions and eps_root (Adam's, and Adagrad's epsilon
  inside the root). optax has no dampening:
  `dampened_trace(o.momentum, o.dampening, o.nesterov, o.fresh)` in trace's place is
  torch's dampened buffer (declare `MomentumSupport(dampening=True)` with it). With your
  own `optimizer_fn`, declare `momentum=` / `adam=` / `adagrad=` as it does.
- `train_step(model, optimizer, x, y)` is your step; it returns `(loss, grads)`, the
  gradients as `nnx.value_and_grad` gives them (or the loss alone, served without
  "grads"). Default: `mse_train_step`, value_and_grad of the mean squared error, then
  `optimizer.update(model, grads)`.
- `declarations` are `sgdc_adapter.serve`'s; by default capabilities ("grads",
  "step_counter"), subnormals "ftz" (XLA on CPU flushes them) and NNX's counter,
  ("uint32", "wrap"): `nnx.Optimizer.step` is a uint32 advanced by `+= 1`.

For each case the kit loads the case's parameters, optimizer state (optax.trace's
buffer, scale_by_adam's moments, scale_by_rss's sum of squares, every optax count) and
NNX's counter into your model and optimizer, runs your step jitted, and reads them back.
One model and optimizer per (d, k) live for the whole run, as in a training loop; the
optimizer, `structures(...)`, holds the chain of every structure and steps the case's.
Every leaf of their state that a case does not set (your own variables, a schedule's
state) starts from its real initial value and then carries what the previous step left
(a chain's, on the steps of its own structure alone), so a step that leaks state from
call to call (gradients accumulated across calls, a buffer never reset) shows as a wrong
result instead of hiding behind a fresh model per case.

Speed: each (d, k) is traced once, abstractly; each (n, d, k, shards) is compiled once,
one program for every optimizer structure (it runs each chain and selects the case's
updates, `jax.lax.select_n`: that chain's own, never a blend), ahead of the cases that need it,
on a thread pool, into JAX's persistent compilation cache
(`sgdc_adapter.enable_jax_compilation_cache`, turned on by `serve_*`); per case the
compiled step is dispatched with host arrays and nothing else.

SPMD: `serve_spmd(model_fn, optimizer_fn, train_step=None, *, mesh_fn=None, rules=None,
batch=None, ...)` runs the same step sharded by XLA's partitioner: `mesh_fn(S)` returns
your `jax.sharding.Mesh` of S devices for a case with num_shards = S (default: the first S
devices on one axis "shards"); the parameters are placed by `rules`, a `PartitionSpec`
for "kernel" and for "bias" (default: the `nnx.with_partitioning` annotations of your
model's parameters; unannotated, replicated), the optimizer's buffers and moments as
their parameters, x and y by `batch` (default: rows split over the mesh's first axis).
Shapes need not divide the mesh: XLA pads. Declared `sharded=True` and `max_shards` the
device count; with "shard_layout" in capabilities the kit reports each device's part of
the parameters and state, read from the arrays. JAX on the CPU has one device unless
told otherwise before it is imported: call `cpu_devices(8)` first.

Both harnesses compile with XLA's quickest CPU code generation (`quick_compile`,
`QUICK_COMPILE_FLAGS`, set in XLA_FLAGS as the harness is imported: the same programs, in
about half the compile time); a flag you set in XLA_FLAGS yourself is kept.

pytest: `check_nnx(...)` and `check_spmd(...)` (also `sgdc.check_nnx(...)` /
`sgdc.check_spmd(...)` on the `sgdc` fixture) take the same arguments plus the run's
options (`cases`, `seed`, `properties`, ...) and pass only on CONFORMANT.

This package imports JAX, Flax and optax only when a harness is made; where they are
missing `serve_*` exits 77 (skipped) and `check_*` skips the test.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from .. import require, serve
from .._serve import AdagradSupport, AdamSupport, MomentumSupport, momentum_declaration

if TYPE_CHECKING:
    from ..suite import SuiteResult
    from ._harness import CaseOptimizer, Harness

__all__ = ["CaseOptimizer", "QUICK_COMPILE_FLAGS", "check_nnx", "check_spmd", "cpu_devices",
           "dampened_trace", "default_model", "harness", "mse_train_step", "optax_optimizer",
           "quick_compile", "serve_nnx", "serve_spmd", "served_structures", "structures"]

MAX_BATCH = 32
FRAMEWORKS = ("jax", "flax.nnx", "optax")
# What the default optimizer_fn takes: optax has no dampening, and optax.adagrad's
# epsilon sits inside the root.
DEFAULT_OPTIMIZERS: dict[str, Any] = {
    "momentum": MomentumSupport(dampening=False, nesterov=True,
                                weight_decay=("coupled", "decoupled")),
    "adam": AdamSupport(weight_decay=("coupled", "decoupled"), eps_root=True),
    "adagrad": AdagradSupport(weight_decay=("coupled", "decoupled"), eps_root=True)}


def __getattr__(name: str) -> Any:
    """The harness's public names, imported (with JAX) on first use."""
    if name in ("CaseOptimizer", "optax_optimizer", "mse_train_step", "default_model",
                "dampened_trace", "structures"):
        from . import _harness
        return getattr(_harness, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# XLA's CPU code generation at its quickest: the older fusion emitters and LLVM at
# optimization level 0. The partitioned HLO (every collective, every operation) is the
# same; only how each fusion becomes machine code changes, with XLA's fast math off as
# by default, in about half the compile time of XLA's defaults (docs/benchmarks.md). The
# suite's bound holds for any order of the operations, so a conforming program conforms
# compiled either way (and a user's GPU runs code compiled differently again).
QUICK_COMPILE_FLAGS = {"xla_cpu_use_fusion_emitters": "false",
                       "xla_backend_optimization_level": "0",
                       "xla_llvm_disable_expensive_passes": "true"}


def quick_compile() -> None:
    """Adds QUICK_COMPILE_FLAGS to XLA_FLAGS, each unless XLA_FLAGS sets it already (to
    keep XLA's defaults, set them there: `--xla_cpu_use_fusion_emitters=true`, ...). XLA
    reads XLA_FLAGS when JAX first runs or compiles anything, so this counts only before
    that; the harnesses call it as they are imported, `cpu_devices` too."""
    _add_xla_flags(QUICK_COMPILE_FLAGS)


def _add_xla_flags(wanted: Mapping[str, str]) -> None:
    flags = os.environ.get("XLA_FLAGS", "")
    added = [f"--{name}={value}" for name, value in wanted.items() if name not in flags]
    os.environ["XLA_FLAGS"] = " ".join([flags, *added]).strip()


def cpu_devices(count: int) -> None:
    """Gives JAX on the CPU `count` host devices, for SPMD over a mesh of up to `count`,
    and XLA's quickest CPU compilation (`quick_compile`). Call it before JAX is imported:
    the device count is fixed when JAX initialises."""
    import sys
    if "jax" in sys.modules:
        raise RuntimeError("cpu_devices() must come before the first `import jax`")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    _add_xla_flags({"xla_force_host_platform_device_count": str(count)})
    quick_compile()


def harness(model_fn: Callable[..., Any] | None = None,
            optimizer_fn: Callable[..., Any] | None = None,
            train_step: Callable[..., Any] | None = None, *,
            mesh_fn: Callable[[int], Any] | None = None, rules: Mapping[str, Any] | None = None,
            batch: Any = None, spmd: bool = False, layout: bool = False,
            declarations: Mapping[str, Any] | None = None) -> Harness:
    """The harness `serve_nnx` and `serve_spmd` serve (its `step_batch`), for a test
    that drives it directly: `programs` lists the (n, d, k, shards) it has compiled, and
    `hlo(n, d, k, shards)` gives one's compiled (partitioned) HLO text. With
    `declarations` (the hello's), only the optimizer structures they allow are built
    (`served_structures`); without, every one."""
    require(*FRAMEWORKS)
    import jax

    from .. import enable_jax_compilation_cache
    from ._harness import Harness, Sharding, one_axis_mesh
    enable_jax_compilation_cache(jax)
    sharding = Sharding(mesh_fn or one_axis_mesh, rules, batch, layout) if spmd else None
    return Harness(model_fn, optimizer_fn, train_step, sharding,
                   reject_dampening=optimizer_fn is None,
                   structures=None if declarations is None else served_structures(declarations))


def served_structures(declarations: Mapping[str, Any]) -> list[tuple[str, bool]]:
    """The optimizer structures, (kind, nesterov), whose cases `declarations` let the
    suite send: plain SGD, then each declared optimizer (Nesterov where momentum declares
    it), those the recipe's "optimizers" name where it names any. Each structure is one
    chain in every compiled program, so one left out is compile time saved."""
    recipe = declarations.get("recipe") or {}
    named = recipe.get("optimizers")

    def allowed(kind: str) -> bool:
        return named is None or kind in named

    out = [("sgd", False)] if allowed("sgd") else []
    if declarations.get("momentum") is not None and allowed("momentum"):
        out.append(("momentum", False))
        if momentum_declaration(declarations["momentum"]).nesterov:
            out.append(("momentum", True))
    out += [(kind, False) for kind in ("adam", "adagrad")
            if declarations.get(kind) is not None and allowed(kind)]
    return out


def _declarations(optimizer_fn: Callable[..., Any] | None, spmd: bool,
                  declarations: dict[str, Any]) -> dict[str, Any]:
    """`declarations` over the defaults: the NNX counter, XLA's flushed subnormals, and
    for the default optimizer_fn what it takes; for SPMD, sharded over every device."""
    out: dict[str, Any] = {"capabilities": ("grads", "step_counter"), "subnormals": "ftz",
                           "counter": ("uint32", "wrap")}
    if optimizer_fn is None:
        out.update(DEFAULT_OPTIMIZERS)
    if spmd:
        import jax
        out.update(sharded=True, max_shards=jax.device_count())
    out.update(declarations)
    if "step_counter" not in out["capabilities"] and "counter" not in declarations:
        del out["counter"]
    return out


def _version(version: str | None) -> str:
    if version is not None:
        return version
    import flax
    return str(flax.__version__)


def serve_nnx(model_fn: Callable[..., Any] | None = None,
              optimizer_fn: Callable[..., Any] | None = None,
              train_step: Callable[..., Any] | None = None, *, name: str = "flax-nnx",
              version: str | None = None, max_batch: int = MAX_BATCH,
              **declarations: Any) -> NoReturn:
    """Serve your Flax NNX model, optax optimizer and train step on stdin/stdout (the
    package docstring says what each is), then exit."""
    decl = _declarations(optimizer_fn, False, declarations)
    h = harness(model_fn, optimizer_fn, train_step, declarations=decl)
    _serve(h, name, version, max_batch, decl)


def serve_spmd(model_fn: Callable[..., Any] | None = None,
               optimizer_fn: Callable[..., Any] | None = None,
               train_step: Callable[..., Any] | None = None, *,
               mesh_fn: Callable[[int], Any] | None = None,
               rules: Mapping[str, Any] | None = None, batch: Any = None,
               name: str = "jax-spmd", version: str | None = None, max_batch: int = MAX_BATCH,
               **declarations: Any) -> NoReturn:
    """Serve the step sharded over your mesh by your rules (package docstring), then exit."""
    decl = _declarations(optimizer_fn, True, declarations)
    h = harness(model_fn, optimizer_fn, train_step, mesh_fn=mesh_fn, rules=rules, batch=batch,
                spmd=True, layout="shard_layout" in decl["capabilities"], declarations=decl)
    _serve(h, name, version, max_batch, decl)


def _serve(h: Harness, name: str, version: str | None, max_batch: int,
           declarations: dict[str, Any]) -> NoReturn:
    try:
        serve(step_batch=h.step_batch, max_batch=max_batch, name=name,
              version=_version(version), **declarations)
    finally:
        h.close()


def _check(spmd: bool, model_fn: Callable[..., Any] | None,
           optimizer_fn: Callable[..., Any] | None, train_step: Callable[..., Any] | None,
           sharding: dict[str, Any], name: str, version: str | None, max_batch: int,
           run_options: dict[str, Any], declarations: dict[str, Any]) -> SuiteResult:
    import importlib.util

    import pytest

    from ..pytest_plugin import Sgdc
    missing = [m for m in FRAMEWORKS if importlib.util.find_spec(m.split(".")[0]) is None]
    if missing:
        pytest.skip(f"{', '.join(missing)} not installed")
    decl = _declarations(optimizer_fn, spmd, declarations)
    h = harness(model_fn, optimizer_fn, train_step, spmd=spmd,
                layout="shard_layout" in decl["capabilities"], declarations=decl, **sharding)
    try:
        return Sgdc().check(step_batch=h.step_batch, max_batch=max_batch, name=name,
                            version=_version(version), **run_options, **decl)
    finally:
        h.close()


RUN_OPTIONS = ("cases", "seed", "properties", "case", "case_timeout", "extra_args", "timeout")


def check_nnx(model_fn: Callable[..., Any] | None = None,
              optimizer_fn: Callable[..., Any] | None = None,
              train_step: Callable[..., Any] | None = None, *, name: str = "flax-nnx",
              version: str | None = None, max_batch: int = MAX_BATCH, cases: int | None = None,
              seed: int | None = None, properties: Sequence[str] = (),
              **declarations: Any) -> SuiteResult:
    """pytest: run the suite against `serve_nnx`'s step in this process; passes only on
    CONFORMANT (`sgdc.check`'s judgement), skips where JAX, Flax or optax is missing."""
    options = {key: declarations.pop(key) for key in RUN_OPTIONS if key in declarations}
    return _check(False, model_fn, optimizer_fn, train_step, {}, name, version, max_batch,
                  {"cases": cases, "seed": seed, "properties": properties, **options},
                  declarations)


def check_spmd(model_fn: Callable[..., Any] | None = None,
               optimizer_fn: Callable[..., Any] | None = None,
               train_step: Callable[..., Any] | None = None, *,
               mesh_fn: Callable[[int], Any] | None = None,
               rules: Mapping[str, Any] | None = None, batch: Any = None,
               name: str = "jax-spmd", version: str | None = None, max_batch: int = MAX_BATCH,
               cases: int | None = None, seed: int | None = None,
               properties: Sequence[str] = (), **declarations: Any) -> SuiteResult:
    """pytest: `check_nnx` for `serve_spmd`'s sharded step."""
    options = {key: declarations.pop(key) for key in RUN_OPTIONS if key in declarations}
    return _check(True, model_fn, optimizer_fn, train_step,
                  {"mesh_fn": mesh_fn, "rules": rules, "batch": batch}, name, version,
                  max_batch, {"cases": cases, "seed": seed, "properties": properties, **options},
                  declarations)
