"""The FSDP2 harness: the user's model, `fully_shard` calls, optimizer and train step,
run on a world of gloo rank processes; the kit does the rest.

    import torch
    from torch.distributed.fsdp import FSDPModule, fully_shard
    from sgdc_adapter.torch import serve_fsdp2

    def model_fn(d, k):                       # any module holding one nn.Linear
        return torch.nn.Linear(d, k)

    def parallelize_fn(model, mesh):          # your fully_shard calls
        fully_shard(model, mesh=mesh)
        for m in model.modules():             # sum the ranks' gradients (see train_step)
            if isinstance(m, FSDPModule):
                m.set_gradient_divide_factor(1.0)
                m.set_force_sum_reduction_for_comms(True)

    if __name__ == "__main__":                # the ranks import this file
        serve_fsdp2(model_fn, parallelize_fn, name="my-fsdp2")

The pieces:

- `model_fn(d, k)` returns the module, on the CPU; the kit finds its one nn.Linear (as
  the eager harness does: Linear(d, k), biased, float32, or stored in a dtype the
  declared `precision` names, e.g. converted with `.to(torch.bfloat16)` before
  `fully_shard`: the case's values are rounded into it and read back widened to
  float32, exactly).
- `parallelize_fn(model, mesh)` shards it: any `fully_shard` nesting, `MixedPrecisionPolicy`,
  `reshard_after_forward`, divide factors. `mesh` is the 1-D CPU DeviceMesh of the case's
  `num_shards` ranks, its dimension named "shard". It runs on the case's ranks only, so
  it must not make process groups of its own (`new_group`, `init_device_mesh`,
  `DeviceMesh._unflatten`): those wait for every rank of the world, and the case times
  out.
- `optimizer_fn(params, case_optimizer)` returns the optimizer over the model's (sharded)
  parameters, as for `serve_torch` (default `default_optimizer`: SGD, Adam, AdamW); each
  case's hyperparameters go into its param groups.
- `train_step(model, optimizer, x, y)` runs on every rank of the case with that rank's
  rows (`torch.tensor_split` of the batch, possibly none) and returns the whole batch's
  loss before the update; it must call `optimizer.step()` once, and the gradients
  reported are those that step starts with. The rows of the ranks are uneven, so a
  rank's loss must be its share of the whole batch's mean, not the mean of its own rows.
  Default: `default_train_step`, the rank's sum of squares over the whole batch's
  element count (all-reduced with it) with the gradients summed over the ranks: it
  needs the modules' `set_gradient_divide_factor(1.0)` and
  `set_force_sum_reduction_for_comms(True)` (gloo has no PREMUL_SUM), as above.
  Scaling by S / (N * K) under FSDP2's default average is the same in exact arithmetic
  but overflows S times sooner, which the suite reports.

The functions run in the rank processes: each must be picklable by reference (a
module-level function, or a functools.partial of one), and a script that serves calls
`serve_fsdp2` under `if __name__ == "__main__":`, since the ranks import it.

What the kit does. `world` (default 8) gloo ranks on 127.0.0.1 are started once and
reused (forked by a forkserver that has imported torch and the main module; the serving
process itself imports no torch, putting the ranks' parts together in NumPy, so a script
that imports torch only where `__name__ != "__main__"`, as torch_fsdp2_step.py does,
pays for torch's import once per world, not twice); every rank
builds `init_device_mesh("cpu", (S,))` for S = 1..world, and a case with num_shards = S
runs on ranks 0..S-1. Each rank keeps one model per (d, k, S), made with `model_fn` and
`parallelize_fn` on its first case, and one optimizer per model and optimizer kind, for
the whole run, as a training loop keeps them, and loads each case into them: each rank
its own part of the parameters (DTensors, placed as FSDP2 placed them) and of the
optimizer state in torch's layout (`momentum_buffer`, `exp_avg`, `exp_avg_sq` placed as
their parameter, `step`), no collective; `.grad` is left alone (a train step without
`zero_grad()` must show). Each rank sends back its parts of the parameters, gradients and
state with their offsets, and the kit puts them together (replicas: rank 0's copy) and
reports what each rank stores: "shard_layout", with `state_kernel`/`state_bias` on
momentum and Adam steps, under the declared placement (default "output_chunks",
FSDP2's Shard(0) of the [k, d] weight).

Faults are named and nothing hangs: a model that cannot be built (no Linear, a
`parallelize_fn` or `optimizer_fn` that raises) answers its cases with the error, the
world kept (the ranks agree on it before the step); a train step that raises, a rank
that dies or one silent for ANSWER_TIMEOUT_S (collectives time out after 30 s) answers
the case with an error naming the rank, and the world is stopped and started again for
the next case (a failed collective leaves the process groups unusable). The ranks die
with the serving process, however it ends.

Declarations: the eager harness's (torch.optim's SGD, Adam and AdamW options,
subnormals kept) with "grads" and "shard_layout", `sharded=True`, `max_shards=world`
and `placement="output_chunks"`; the keywords override them. A `MixedPrecisionPolicy`
is declared stage by stage with `precision`, e.g. `precision={"param_dtype":
"bfloat16", "reduce_dtype": "float32"}` for MixedPrecisionPolicy(param_dtype=
torch.bfloat16, reduce_dtype=torch.float32) over float32 parameters (undeclared keys:
reduce_dtype the param_dtype, as FSDP2's reduce_dtype=None; master_dtype, the dtype the
parameters and optimizer state are stored in, float32); the older `compute_format`
declares one format for the whole step instead. Needs torch >= 2.13
(FSDP2 on the CPU); `serve_fsdp2` skips (exit 77) and `check_fsdp2` skips the test
without it.
"""

from __future__ import annotations

import atexit
import importlib.metadata
import pickle
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, Unpack

import numpy as np

from .. import serve, skip
from .._codec import Case, RejectCase
from .._serve import (AdamSupport, Declarations, MomentumSupport, Precision, precision_declaration,
                      reserve_stdout)
from ._fsdp2_world import RankFailure, RankRejected, RankWorld
from ._layout import STATE_KEYS, outputs

if TYPE_CHECKING:
    from ..pytest_plugin import Sgdc
    from ..suite import SuiteResult

__all__ = ["Fsdp2Harness", "RankFailure", "check_fsdp2", "fsdp2_declarations", "serve_fsdp2"]

MIN_TORCH = (2, 13)
Part = tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]


def torch_unavailable() -> str | None:
    """Why FSDP2 cannot run here (torch missing or older than MIN_TORCH), read without
    importing torch; None when it can."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        return "torch is not installed"
    release = tuple(int(p) for p in version.split("+")[0].split(".")[:2])
    if release < MIN_TORCH:
        return f"torch {version} is older than {'.'.join(map(str, MIN_TORCH))} (FSDP2 on CPU)"
    return None


def fsdp2_declarations(declarations: Mapping[str, Any], world: int) -> Declarations:
    """What `serve_fsdp2` declares (the module docstring), the caller's on top."""
    merged: dict[str, Any] = {
        "capabilities": ("grads", "shard_layout"), "subnormals": "ieee",
        "momentum": MomentumSupport(dampening=True, nesterov=True, weight_decay=("coupled",)),
        "adam": AdamSupport(weight_decay=("coupled", "decoupled"), eps_root=False),
        "sharded": True, "max_shards": world, "placement": "output_chunks", **declarations}
    return merged  # type: ignore[return-value]


def _rank_entry(rank: int, world: int, port: int, conn: Any, fns: tuple[Any, ...],
                precision: Mapping[str, str] | None = None) -> None:
    """The rank processes' target, here so that the coordinator need not import torch."""
    from ._fsdp2_rank import rank_main
    rank_main(rank, world, port, conn, fns, precision)


def _default_optimizer(params: Any, case_optimizer: Any) -> Any:
    """`default_optimizer` of the eager harness, imported where it runs (the ranks), so
    that the coordinator need not import torch."""
    from ._eager import default_optimizer
    return default_optimizer(params, case_optimizer)


def _whole(parts: Sequence[Part], what: str) -> np.ndarray:
    """The whole tensor from the ranks' parts (where parts overlap, replicas, rank 0's
    values); ValueError when the parts leave elements uncovered."""
    shape = parts[0][2]
    out = np.zeros(shape, dtype=parts[0][0].dtype)
    covered = np.zeros(shape, dtype=bool)
    for values, offset, _ in reversed(parts):
        where = tuple(slice(o, o + n) for o, n in zip(offset, values.shape))
        out[where] = values
        covered[where] = True
    if not covered.all():
        raise ValueError(f"the ranks' parts of the {what} ({[p[0].shape for p in parts]}) "
                         f"leave {int((~covered).sum())} of its {covered.size} elements on no rank")
    return out


class Fsdp2Harness:
    """The step function of `serve_fsdp2`: `harness(case)` runs one case on the rank
    world and returns its outputs; `run(case)` returns the ranks' own answers (their
    parts, and with `count_collectives` the collectives each ran in the train step, as
    counted by torch.profiler). `start()` starts the world ahead of the first case;
    `close()` stops it. `precision`: the declared one (`serve`'s keyword), under which
    the Linear may be stored in a dtype it names (bfloat16, float16) rather than
    float32."""

    def __init__(self, model_fn: Callable[..., Any], parallelize_fn: Callable[..., Any],
                 optimizer_fn: Callable[..., Any] | None = None,
                 train_step: Callable[..., Any] | None = None, world: int = 8, *,
                 precision: Precision | None = None) -> None:
        if not isinstance(world, int) or world < 1:
            raise ValueError(f"world must be a positive number of ranks, got {world!r}")
        declared = None if precision is None else precision_declaration(precision)
        fns = {"model_fn": model_fn, "parallelize_fn": parallelize_fn,
               "optimizer_fn": optimizer_fn, "train_step": train_step}
        for what, fn in fns.items():
            if fn is None and what in ("optimizer_fn", "train_step"):
                continue
            if not callable(fn):
                raise ValueError(f"{what} must be callable, got {fn!r}")
            try:
                pickle.dumps(fn)
            except Exception as e:  # noqa: BLE001 - any pickling failure says the same
                raise ValueError(f"{what} ({fn!r}) cannot be sent to the rank processes: it "
                                 f"must be picklable by reference, a module-level function or "
                                 f"a functools.partial of one ({type(e).__name__}: {e})") from None
        if optimizer_fn is None:
            optimizer_fn = _default_optimizer
        modules = {getattr(fn, "__module__", None) for fn in fns.values()}
        # Imported once in the forkserver, not once per rank: fully_shard imports
        # torch._dynamo on its first call (about 0.5 s of CPU in each of `world` ranks).
        preload = ["torch", "torch.distributed.fsdp", "torch._dynamo",
                   __name__.rsplit(".", 1)[0] + "._fsdp2_rank"]
        if "__main__" in modules:  # the user's functions live in the served script
            preload.insert(0, "__main__")
        self.world = world
        self.ranks = RankWorld(world, _rank_entry,
                               args=((model_fn, parallelize_fn, optimizer_fn, train_step),
                                     declared),
                               preload=preload)
        self.refused: dict[tuple[int, int, int, str], str] = {}

    def start(self) -> None:
        self.ranks.start()

    def close(self) -> None:
        self.ranks.stop()

    def run(self, case: Case, count_collectives: bool = False) -> list[dict[str, Any]]:
        """The ranks' answers to `case`, in rank order. RejectCase when the case's model
        could not be built (remembered: its later cases are refused at once),
        RankFailure when a rank failed (the world restarts on the next case)."""
        shards = case.num_shards
        if shards > self.world:
            raise RejectCase(f"at most {self.world} shards (gloo ranks)")
        key = (case.d, case.k, shards, case.optimizer.kind if case.optimizer else "sgd")
        if key in self.refused:
            raise RejectCase(self.refused[key])
        try:
            return self.ranks.run({"case": case, "count_collectives": count_collectives}, shards)
        except RankRejected as e:
            if e.permanent:  # the model or optimizer cannot be built
                self.refused[key] = str(e)
            raise RejectCase(str(e)) from None

    def __call__(self, case: Case) -> dict[str, Any]:
        answers = self.run(case)

        def whole(group: str, name: str, key: str | None = None) -> np.ndarray:
            parts = [a[group][name] if key is None else a[group][name][key] for a in answers]
            return _whole(parts, f"{name}{'' if key is None else ' ' + key}")

        params = {name: whole("params", name) for name in ("weight", "bias")}
        grads = {name: whole("grads", name) for name in ("weight", "bias")}

        def state(name: str) -> dict[str, np.ndarray]:
            return {key: whole("state", name, key) for key in answers[0]["state"][name]}

        # The parts are the ranks' own copies, float32: whole arrays as they are.
        out = outputs(case, answers[0]["loss"], params, grads, state,
                      lambda name: whole("decayed", name), np.asarray)
        out["shards"] = [self._layout(case, a) for a in answers]
        return out

    @staticmethod
    def _layout(case: Case, answer: dict[str, Any]) -> dict[str, int]:
        """What one rank stores: its parameter elements, and with an optimizer the
        elements of the parameter-sized state it keeps for each (torch's state keys but
        `step`; at momentum 0, where torch keeps no buffer, those of the gradient the
        spec's buffer is made of)."""
        size = {name: int(answer["params"][name][0].size) for name in ("weight", "bias")}
        layout = {"kernel": size["weight"], "bias": size["bias"]}
        o = case.optimizer
        if o is None:
            return layout
        keys = [k for k in STATE_KEYS[o.kind] if k != "step"]
        for name, ours in (("weight", "kernel"), ("bias", "bias")):
            st = answer["state"][name]
            if any(k in st for k in keys):
                n = sum(int(st[k][0].size) for k in keys if k in st)
            else:
                n = int(answer["grads"][name][0].size)
            layout["state_" + ours] = n
        return layout


def _refuse_in_rank() -> None:
    """RuntimeError when called while a rank process imports the main module: the
    script serves from its top level instead of under `if __name__ == "__main__":`."""
    if getattr(sys.modules.get("__main__"), "__name__", "") == "__mp_main__":
        raise RuntimeError("serve_fsdp2 was called while the rank processes import the main "
                           "module: call it under `if __name__ == \"__main__\":`")


def serve_fsdp2(model_fn: Callable[..., Any], parallelize_fn: Callable[..., Any],
                optimizer_fn: Callable[..., Any] | None = None,
                train_step: Callable[..., Any] | None = None, world: int = 8, *,
                name: str = "torch-fsdp2", version: str | None = None,
                **declarations: Unpack[Declarations]) -> NoReturn:
    """Serve the user's FSDP2 step over the protocol on stdin/stdout (the module
    docstring); `version` defaults to torch's. Skips (exit 77) without torch >= 2.13."""
    _refuse_in_rank()
    reason = torch_unavailable()
    if reason is not None:
        skip(reason)
    harness = Fsdp2Harness(model_fn, parallelize_fn, optimizer_fn, train_step, world,
                           precision=declarations.get("precision"))
    decls = fsdp2_declarations(declarations, world)
    reserve_stdout()  # before the ranks start: they must not inherit it
    atexit.register(harness.close)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(0))  # sys.exit runs atexit: the ranks stop
    harness.start()  # the ranks join the world while the handshake goes on
    serve(harness, name=name, version=version or importlib.metadata.version("torch"), **decls)


def check_fsdp2(sgdc: Sgdc, model_fn: Callable[..., Any], parallelize_fn: Callable[..., Any],
                optimizer_fn: Callable[..., Any] | None = None,
                train_step: Callable[..., Any] | None = None, world: int = 8, *,
                name: str = "torch-fsdp2", version: str | None = None,
                cases: int | None = None, seed: int | None = None,
                properties: Sequence[str] = (), case: int | None = None,
                case_timeout: float | None = None, extra_args: Sequence[str] = (),
                timeout: float = 600.0, **declarations: Unpack[Declarations]) -> SuiteResult:
    """`sgdc.check_fsdp2(model_fn, parallelize_fn, ...)` in pytest: the suite against the
    user's FSDP2 step, judged as `sgdc.check` judges (the module docstring; the options
    are `sgdc.check`'s). Skips the test without torch >= 2.13. The functions must live
    in an importable module (the test module is): the ranks import them."""
    import pytest
    reason = torch_unavailable()
    if reason is not None:
        pytest.skip(reason)
    harness = Fsdp2Harness(model_fn, parallelize_fn, optimizer_fn, train_step, world,
                           precision=declarations.get("precision"))
    harness.start()
    try:
        return sgdc.check(harness, name=name,
                          version=version or importlib.metadata.version("torch"), cases=cases,
                          seed=seed, properties=properties, case=case, case_timeout=case_timeout,
                          extra_args=extra_args, timeout=timeout,
                          **fsdp2_declarations(declarations, world))
    finally:
        harness.close()
