#!/usr/bin/env python3
"""The step as PyTorch FSDP2 runs it: `fully_shard` over a CPU DeviceMesh of gloo ranks,
served by the kit's FSDP2 harness (`sgdc_adapter.torch.serve_fsdp2`: the rank world,
loading each case into the ranks' shards and reading them back; docs/sharded.md).

    conformance/python/run-adapter conformance/python/adapters/torch_fsdp2_step.py [--mutant NAME] [--even-batches] [--clip]
        [--param-dtype float32|bfloat16]

The user's part is below: an nn.Linear, one `fully_shard` that sums the ranks'
gradients, torch.optim's SGD, Adam or AdamW (the kit's default optimizer_fn) and the
kit's default train step (each rank's sum of squares over the whole batch's count).

Mutants (--mutant, each a bug a user of FSDP2 could write; the suite must reject each):
  mean_of_shard_means  each rank's loss is F.mse_loss over its own rows, as tutorials
                       write it: the mean of the ranks' means, wrong when N % S != 0
                       (and NaN on a rank with no rows)
  missing_average      each rank's loss scaled by S / (N * K), as for FSDP2's default
                       average, while the gradients are summed: S times the gradient
  reduce_dtype_bf16    MixedPrecisionPolicy(reduce_dtype=torch.bfloat16): the gradients
                       are reduced in bfloat16 (rounded to 8 bits even at S = 1); with
                       --param-dtype bfloat16, MixedPrecisionPolicy(param_dtype=
                       torch.bfloat16, reduce_dtype=torch.bfloat16) while the precision
                       declared reduces in float32
  drop_remainder_rows  each rank takes N // S rows (DistributedSampler's drop_last): the
                       N % S remainder rows are lost
  per_rank_mse_loss    the tutorials' configuration: fully_shard's default average of each
                       rank's F.mse_loss over its own rows; the batch's mean only when
                       every rank has as many rows (see --even-batches)
  replicated_state     no fully_shard: every rank keeps the whole layer and all-reduces
                       its whole gradients (replication, as HSDP with one shard per
                       replica does): numbers right, state not sharded, and the layout
                       says so

  clip_local_shard_norm
                       (with --clip's declaration) each rank clips its own shards of the
                       gradients by their norm alone, `torch.linalg.vector_norm` of the
                       local tensors, where clip_grad_norm_'s norm over the DTensors
                       is the global one
  master_bf16          (with --param-dtype bfloat16's declaration) the parameters stored
                       in bfloat16: the Linear converted with .to(torch.bfloat16) before
                       fully_shard, MixedPrecisionPolicy(param_dtype=torch.bfloat16,
                       reduce_dtype=torch.float32), so that the optimizer keeps its state
                       and updates the parameters in bfloat16 where float32 master
                       weights are declared

--clip calls `torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)` between the
backward and the optimizer's step, on FSDP2's sharded DTensor gradients, and declares it:
the recipe's clipping with max_norm MAX_NORM and torch's eps, 1e-6 (docs/spec/step.md,
"Gradient clipping").

--even-batches declares the recipe's even batches (N always a multiple of num_shards, as a
padding DistributedSampler guarantees). Under it per_rank_mse_loss is the batch's mean and
conforms; undeclared it is rejected.

--param-dtype bfloat16 computes in bfloat16 over float32 parameters, FSDP2's usual
mixed precision: MixedPrecisionPolicy(param_dtype=torch.bfloat16,
reduce_dtype=torch.float32) (the layer's inputs cast to bfloat16, the gradients summed
in float32), declared stage by stage: precision {"param_dtype": "bfloat16",
"reduce_dtype": "float32", "master_dtype": "float32"}. --param-dtype float32 declares
that precision all float32. Without --param-dtype no precision is declared (the
float32 step of before). replicated_state ignores the policy (no fully_shard).
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import Any

import sgdc_adapter.torch

if __name__ != "__main__":  # only the ranks (which import this file) run torch
    import torch
    import torch.distributed as dist
    import torch.distributed.fsdp as fsdp
    import torch.nn.functional as F
MUTANTS = ("mean_of_shard_means", "missing_average", "reduce_dtype_bf16", "drop_remainder_rows",
           "per_rank_mse_loss", "replicated_state", "clip_local_shard_norm", "master_bf16")
PARAM_DTYPES = ("float32", "bfloat16")  # --param-dtype's choices
MAX_NORM = 1.0  # --clip's max_norm


def dtype(name: Any) -> Any:
    """The torch dtype of a name ("bfloat16"), a torch dtype as it is, None as None: the
    coordinator, which imports no torch, names dtypes in the partials it sends."""
    return getattr(torch, name) if isinstance(name, str) else name


def model_fn(d: int, k: int) -> Any:
    return torch.nn.Linear(d, k)


def bf16_model_fn(d: int, k: int) -> Any:
    return torch.nn.Linear(d, k).to(torch.bfloat16)  # bfloat16 master weights


def parallelize_fn(model: Any, mesh: Any, reduce_dtype: Any = None,
                   param_dtype: Any = None) -> None:
    # Resharded after the forward and gathered again for the backward, as every layer
    # of a model but its root is by default; summed, not averaged: each rank's loss is
    # already its share of the whole batch's mean (gloo has no PREMUL_SUM).
    policy = fsdp.MixedPrecisionPolicy(param_dtype=dtype(param_dtype),
                                       reduce_dtype=dtype(reduce_dtype))
    fsdp.fully_shard(model, mesh=mesh, reshard_after_forward=True, mp_policy=policy)
    model.set_gradient_divide_factor(1.0)
    model.set_force_sum_reduction_for_comms(True)


def bf16_reduction(model: Any, mesh: Any, param_dtype: Any = None) -> None:
    parallelize_fn(model, mesh, reduce_dtype=torch.bfloat16, param_dtype=param_dtype)


def averaged(model: Any, mesh: Any, param_dtype: Any = None) -> None:
    if param_dtype is None:
        fsdp.fully_shard(model, mesh=mesh)  # FSDP2's default: the ranks' gradients averaged
        return
    fsdp.fully_shard(model, mesh=mesh, mp_policy=fsdp.MixedPrecisionPolicy(
        param_dtype=dtype(param_dtype), reduce_dtype=torch.float32))


def per_rank_mse_loss(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    loss = loss.detach()
    group = model.weight.device_mesh.get_group()
    dist.all_reduce(loss, group=group)
    return loss / dist.get_world_size(group)


def replicate(model: Any, mesh: Any) -> None:
    # The mesh's own group: parallelize_fn runs on the case's ranks only, so it must not
    # make process groups of its own (those wait for every rank of the world).
    group = mesh.get_group()
    for p in model.parameters():
        p.register_post_accumulate_grad_hook(lambda p: dist.all_reduce(p.grad, group=group))


def mean_of_shard_means(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)  # FSDP2's average of these is not the batch's mean
    loss.backward()
    optimizer.step()
    group = model.weight.device_mesh.get_group()
    shards = dist.get_world_size(group)
    loss = loss.detach() / shards
    dist.all_reduce(loss, group=group)
    return loss


def missing_average(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    group = model.weight.device_mesh.get_group()
    squares, count = ((model(x) - y) ** 2).sum(), torch.tensor(float(y.numel()))
    dist.all_reduce(count, group=group)
    (squares * dist.get_world_size(group) / count).backward()  # for an average, not a sum
    optimizer.step()
    loss = squares.detach() / count
    dist.all_reduce(loss, group=group)
    return loss


def drop_remainder_rows(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    group = model.weight.device_mesh.get_group()
    rows = torch.tensor(len(x))
    dist.all_reduce(rows, group=group)  # N
    keep = int(rows) // dist.get_world_size(group)  # DistributedSampler(drop_last=True)
    squares, count = ((model(x[:keep]) - y[:keep]) ** 2).sum(), float(rows) * y.shape[1]
    (squares / count).backward()
    optimizer.step()
    loss = squares.detach() / count
    dist.all_reduce(loss, group=group)
    return loss


def summed_loss_backward(model: Any, x: Any, y: Any) -> Any:
    """The kit's default step up to its backward (each rank's sum of squares over the
    whole batch's count, all-reduced): returns the whole batch's loss."""
    squares = ((model(x) - y) ** 2).sum()
    totals = torch.stack([squares.detach(), torch.tensor(float(y.numel()))])
    dist.all_reduce(totals, group=model.weight.device_mesh.get_group())
    (squares / totals[1]).backward()
    return totals[0] / totals[1]


def clipped(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    loss = summed_loss_backward(model, x, y)
    torch.nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)  # the DTensors' global norm
    optimizer.step()
    return loss


def clip_local_shard_norm(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    loss = summed_loss_backward(model, x, y)
    local = [p.grad.to_local() for p in model.parameters()]  # this rank's shards alone
    norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in local]))
    factor = torch.clamp(MAX_NORM / (norm + 1e-6), max=1.0)
    for g in local:
        g.mul_(factor)
    optimizer.step()
    return loss


def precision_of(param_dtype: str) -> dict[str, str]:
    """The precision declared for --param-dtype: the compute copy in `param_dtype`, the
    gradients summed and the parameters and state kept in float32."""
    return {"param_dtype": param_dtype, "reduce_dtype": "float32", "master_dtype": "float32"}


def with_param_dtype(mutant: str | None, param_dtype: str) -> Callable[..., None]:
    """The parallelize function of `mutant` (None: the correct one) under a
    MixedPrecisionPolicy whose param_dtype is `param_dtype`; reduce_dtype float32 but
    for reduce_dtype_bf16's."""
    if mutant == "replicated_state":
        return replicate  # no fully_shard, no policy
    if mutant == "reduce_dtype_bf16":
        return functools.partial(bf16_reduction, param_dtype=param_dtype)
    if mutant == "per_rank_mse_loss":
        return functools.partial(averaged, param_dtype=param_dtype)
    return functools.partial(parallelize_fn, param_dtype=param_dtype, reduce_dtype="float32")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", choices=MUTANTS, help="inject one FSDP2 usage bug")
    parser.add_argument("--even-batches", action="store_true",
                        help="declare that N is always a multiple of num_shards")
    parser.add_argument("--clip", action="store_true",
                        help=f"clip_grad_norm_ to {MAX_NORM} before the step, declared")
    parser.add_argument("--param-dtype", choices=PARAM_DTYPES,
                        help="MixedPrecisionPolicy(param_dtype=..., reduce_dtype=float32), "
                             "declared as the precision by stage")
    args = parser.parse_args()
    mutant = args.mutant
    if mutant == "master_bf16" and args.param_dtype not in (None, "bfloat16"):
        parser.error("--mutant master_bf16 computes in bfloat16: it takes --param-dtype "
                     "bfloat16 or none")
    parallelize = {"reduce_dtype_bf16": bf16_reduction, "replicated_state": replicate,
                   "per_rank_mse_loss": averaged}
    train = {"mean_of_shard_means": mean_of_shard_means, "missing_average": missing_average,
             "drop_remainder_rows": drop_remainder_rows, "per_rank_mse_loss": per_rank_mse_loss,
             "clip_local_shard_norm": clip_local_shard_norm}
    clip = args.clip or mutant == "clip_local_shard_norm"
    recipe: dict[str, Any] = {}
    if args.even_batches:
        recipe["even_batches"] = True
    if clip:
        recipe["clipping"] = {"max_norm": MAX_NORM, "eps": 1e-6}
    declarations: dict[str, Any] = {"recipe": recipe} if recipe else {}
    make_model: Callable[[int, int], Any] = model_fn
    parallelize_model: Callable[..., None] = parallelize.get(mutant, parallelize_fn)
    param_dtype = "bfloat16" if mutant == "master_bf16" else args.param_dtype
    if param_dtype is not None:
        parallelize_model = with_param_dtype(mutant, param_dtype)
        declarations["precision"] = precision_of(param_dtype)
    if mutant == "master_bf16":
        make_model = bf16_model_fn
    name = "torch-fsdp2" if mutant is None else f"torch-fsdp2-mutant-{mutant}"
    name += "-clip" if args.clip else ""
    name += f"-param-{args.param_dtype}" if args.param_dtype else ""
    sgdc_adapter.torch.serve_fsdp2(
        make_model, parallelize_model, train_step=train.get(mutant, clipped if clip else None),
        name=name, **declarations)


if __name__ == "__main__":
    main()
