"""The rank side of the FSDP2 harness: one gloo rank running the user's model,
`fully_shard` calls, optimizer and train step on its rows of each case.

Imported only in the rank processes (and the forkserver that forks them).
"""

from __future__ import annotations

import datetime
import os
import sys
import traceback
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Mapping
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.device_mesh import DeviceMesh, init_device_mesh
from torch.distributed.tensor import DTensor, distribute_tensor
from torch.distributed.tensor._utils import compute_local_shape_and_global_offset

from .._codec import Case
from ._fsdp2_world import die_with_parent
from ._layout import keeps_no_buffer
from ._state import (GradientCapture, check_linear, decayed_gradient, find_linear,
                     linear_parameters, loss_output, optimizer_kind, parameter_dtypes,
                     set_hyperparameters, state_dtype, torch_parameters, torch_state, widened)

COLLECTIVE_TIMEOUT_S = 30
MODELS_KEPT = 16  # sharded models kept per rank and S, one per (d, k)
# A part of a tensor as a rank holds it: its values, where they start in the whole
# tensor, and the whole tensor's shape.
Part = tuple[np.ndarray, tuple[int, ...], tuple[int, ...]]
# The process group of the case's ranks while its train step runs (default_train_step's).
_case_group: list[Any] = [None]


def default_train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                       x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """One data-parallel step on this rank's rows, exact for any split of the batch:
    the rank's sum of squared residuals over the number of elements of the whole batch
    (both all-reduced in one collective over the case's ranks), so that gradients
    summed over the ranks are the whole batch's mean. It relies on the FSDP2 modules
    summing rather than averaging (`set_gradient_divide_factor(1.0)` and, on gloo,
    `set_force_sum_reduction_for_comms(True)`). A rank without rows adds an exact zero.
    Returns the whole batch's loss before the update."""
    optimizer.zero_grad()
    squares = ((model(x) - y) ** 2).sum()
    totals = torch.stack([squares.detach(), torch.tensor(float(y.numel()))])
    dist.all_reduce(totals, group=_case_group[0])
    (squares / totals[1]).backward()
    optimizer.step()
    return totals[0] / totals[1]


def collective_counts(names: Iterable[str]) -> dict[str, int]:
    """How many times each collective ran, from profiler event names: the c10d ops
    ("c10d::...") and what the gloo backend executed for them ("gloo:...")."""
    return dict(Counter(name for name in names if name.startswith(("c10d::", "gloo:"))))


def local(t: torch.Tensor) -> torch.Tensor:
    """This rank's values of `t`: a DTensor's local shard, or a plain tensor whole."""
    return t.to_local() if isinstance(t, DTensor) else t


def part(t: torch.Tensor, values: torch.Tensor | None = None) -> Part:
    """This rank's part of `t` (`local`); bfloat16 and float16 widened to float32
    (exact: NumPy has no bfloat16), float32 as it is. `values`: this rank's values of
    another tensor placed as `t`, reported in their stead."""
    if isinstance(t, DTensor):
        _, offset = compute_local_shape_and_global_offset(t.shape, t.device_mesh, t.placements)
    else:
        offset = (0,) * t.dim()
    mine = local(t) if values is None else values
    return widened(mine.detach().cpu()).numpy().copy(), tuple(offset), tuple(t.shape)


def decayed_part(case: Case, name: str, grad: torch.Tensor, before: np.ndarray) -> Part:
    """This rank's part of the decayed gradient its step used at momentum 0, where torch
    keeps no buffer (`decayed_gradient`, elementwise): made from its part of `grad`
    (widened to float32) and its part of `before`, the case's parameter (float32)."""
    return part(grad, decayed_gradient(case, name, widened(local(grad)),
                                       local(placed_as(grad, before))))


def placed_as(p: torch.Tensor, full: np.ndarray, dtype: torch.dtype | None = None) -> torch.Tensor:
    """`full` placed as the parameter `p`: this rank's part of it, no collective; in
    `dtype` when given (rounded to it first)."""
    whole = torch.from_numpy(np.ascontiguousarray(full))
    if dtype is not None and whole.dtype != dtype:
        whole = whole.to(dtype)
    if isinstance(p, DTensor):
        return distribute_tensor(whole, p.device_mesh, p.placements, src_data_rank=None)
    return whole


class Fsdp2Rank:
    """One rank's meshes (S = 1..world, ranks 0..S-1), and the models and optimizers it
    keeps between cases: one model per (d, k, S), one optimizer per model and kind.
    `precision`: the declared one (names normalised), under which the Linear may be
    stored in a dtype it names."""

    def __init__(self, rank: int, world: int, fns: tuple[Any, Any, Any, Any],
                 precision: Mapping[str, str] | None = None) -> None:
        self.rank = rank
        self.dtypes = parameter_dtypes(precision)
        self.model_fn, self.parallelize_fn, self.optimizer_fn, train_step = fns
        self.train_step: Callable[..., Any] = train_step or default_train_step
        # Every rank builds every mesh (process groups are made collectively), in order.
        self.meshes: dict[int, DeviceMesh] = {
            s: init_device_mesh("cpu", (s,), mesh_dim_names=("shard",))
            for s in range(1, world + 1)}
        # Per S, so that every rank of a mesh, having seen the same cases, keeps (and
        # evicts) the same models and knows without asking whether the others build.
        self.models: dict[int, OrderedDict[tuple[int, int], tuple[Any, Any]]] = {
            s: OrderedDict() for s in self.meshes}
        self.optimizers: dict[tuple[Any, ...], tuple[Any, GradientCapture]] = {}

    def _build(self, case: Case) -> str | None:
        """Makes the case's model and optimizer; the error, naming the user's function
        that raised, or None."""
        shards, shape = case.num_shards, (case.d, case.k)
        models = self.models[shards]
        what = f"model_fn({case.d}, {case.k})"
        try:
            if shape not in models:
                model = self.model_fn(case.d, case.k)
                linear = find_linear(model)
                check_linear(linear, case.d, case.k, self.dtypes)
                what = "parallelize_fn(model, mesh)"
                self.parallelize_fn(model, self.meshes[shards])
                if len(models) >= MODELS_KEPT:
                    old = (*models.popitem(last=False)[0], shards)
                    self.optimizers = {k: v for k, v in self.optimizers.items() if k[:3] != old}
                models[shape] = model, linear
            key = (*shape, shards, *optimizer_kind(case))
            if key not in self.optimizers:
                what = "optimizer_fn(params, case_optimizer)"
                model, linear = models[shape]
                optimizer = self.optimizer_fn(list(model.parameters()), case.optimizer)
                if not isinstance(optimizer, torch.optim.Optimizer):
                    raise ValueError(f"it returned a {type(optimizer).__name__}, not a "
                                     f"torch.optim.Optimizer")
                self.optimizers[key] = optimizer, GradientCapture(optimizer, linear)
        except Exception as e:  # noqa: BLE001 - the user's code: reported with the case
            models.pop(shape, None)
            return (f"rank {self.rank}: {what} failed (d={case.d} k={case.k} "
                    f"num_shards={shards}): {type(e).__name__}: {e}")
        return None

    def setup(self, case: Case) -> str | None:
        """Builds the case's model and optimizer when this mesh has none yet, agreed on
        by every rank of the mesh (one all-reduce, only when building), so that no rank
        enters the step while another could not build: this rank's error, "" when
        another rank failed, None when all built."""
        shards = case.num_shards
        if ((case.d, case.k) in self.models[shards]
                and (case.d, case.k, shards, *optimizer_kind(case)) in self.optimizers):
            return None
        error = self._build(case)
        failed = torch.tensor([0.0 if error is None else 1.0])
        dist.all_reduce(failed, group=self.meshes[shards].get_group())
        return error if error is not None else ("" if failed.item() else None)

    def load(self, case: Case) -> tuple[Any, Any, GradientCapture, dict[str, np.ndarray]]:
        """The case's parameters, hyperparameters and optimizer state into this rank's
        shards (each its part of the case's whole tensor, placed as its parameter, no
        collective), replacing what an earlier step left; `.grad` is left alone. Returns
        the model, its optimizer and capture, and the whole parameters loaded
        (`torch_parameters`)."""
        model, linear = self.models[case.num_shards][case.d, case.k]
        optimizer, capture = self.optimizers[(case.d, case.k, case.num_shards,
                                              *optimizer_kind(case))]
        params = linear_parameters(linear)
        with torch.no_grad():
            loaded = torch_parameters(case)
            for name, values in loaded.items():
                p = params[name]
                mine = placed_as(p, values)
                # copy_ rounds the case's float32 values into narrower parameters.
                (p.to_local() if isinstance(p, DTensor) else p).copy_(
                    mine.to_local() if isinstance(mine, DTensor) else mine)
        set_hyperparameters(optimizer, case, params["bias"])
        for name, entries in torch_state(case).items():
            p = params[name]
            optimizer.state[p] = {key: placed_as(p, v, state_dtype(optimizer, p, key))
                                  if v.shape == tuple(p.shape) else torch.from_numpy(v)
                                  for key, v in entries.items()}
        return model, optimizer, capture, loaded

    def step(self, job: dict[str, Any]) -> tuple[str, Any]:
        """Runs one case on this rank: ("ok", its parts), or ("rejected", (why, whether
        the case's model or optimizer could not be built)); an exception of the train
        step propagates."""
        case: Case = job["case"]
        error = self.setup(case)
        if error is not None:
            return "rejected", (error or None, True)
        model, optimizer, capture, before = self.load(case)
        shards = case.num_shards
        x = torch.tensor_split(torch.from_numpy(case.x), shards)[self.rank]
        y = torch.tensor_split(torch.from_numpy(case.y), shards)[self.rank]
        counting = bool(job.get("count_collectives"))
        group = self.meshes[shards].get_group()
        if counting:
            dist.barrier(group=group)  # outside the counted step
        capture.arm(after_backward=case.clip_max_norm is not None)
        _case_group[0] = group
        if counting:
            with torch.profiler.profile() as profile:
                loss = self.train_step(model, optimizer, x, y)
        else:
            loss = self.train_step(model, optimizer, x, y)
        if loss is None:
            raise ValueError("train_step returned None; it returns the loss before the update")
        try:
            grads = capture.take()
        except ValueError as e:
            return "rejected", (f"rank {self.rank}: {e}", False)
        params = linear_parameters(self.models[shards][case.d, case.k][1])
        answer: dict[str, Any] = {
            "loss": loss_output(loss.full_tensor() if isinstance(loss, DTensor) else loss),
            "params": {name: part(p) for name, p in params.items()},
            "grads": {name: part(g) for name, g in grads.items()},
            "state": {name: {key: part(v) for key, v in optimizer.state.get(p, {}).items()
                             if isinstance(v, torch.Tensor)}
                      for name, p in params.items()},
            "placements": str(params["weight"].placements
                              if isinstance(params["weight"], DTensor) else "(not a DTensor)")}
        answer["decayed"] = {name: decayed_part(case, name, grads[name], before[name])
                             for name, p in params.items()
                             if keeps_no_buffer(case, optimizer.state.get(p, {}))}
        if counting:
            answer["collectives"] = collective_counts(e.name for e in profile.events())
        return "ok", answer


def rank_main(rank: int, world: int, port: int, conn: Connection,
              fns: tuple[Any, Any, Any, Any], precision: Mapping[str, str] | None = None) -> None:
    """A gloo rank: joins the world, builds its meshes, then runs cases until told to
    stop (or until a step fails: the coordinator then starts a new world). `precision`:
    the declared one, names normalised (`Fsdp2Rank`)."""
    die_with_parent()
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # loopback only
    torch.set_num_threads(1)  # one thread: the same summation order on every run
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world,
                                timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S))
        state = Fsdp2Rank(rank, world, fns, precision)
    except Exception as e:  # noqa: BLE001 - reported to the coordinator
        conn.send(("error", f"rank {rank} failed to start: {type(e).__name__}: {e}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            break
        if job is None:
            break
        try:
            conn.send(state.step(job))
        except Exception as e:  # noqa: BLE001 - reported; the coordinator stops the world
            traceback.print_exc(file=sys.stderr)
            conn.send(("error", f"rank {rank}: {type(e).__name__}: {e}"))
            break
    dist.destroy_process_group()
