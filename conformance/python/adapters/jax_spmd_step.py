#!/usr/bin/env python3
"""The step sharded with JAX SPMD over num_shards CPU devices (FSDP / ZeRO-3 placement),
served by the kit's SPMD harness (`sgdc_adapter.jax.serve_spmd`).

    conformance/python/run-adapter conformance/python/adapters/jax_spmd_step.py [--mutant NAME]
    conformance/python/run-adapter conformance/python/adapters/jax_spmd_step.py --dump-hlo N,D,K,S

JAX on the CPU gets 8 host devices; a case with num_shards = S runs on a mesh of the first
S ("shards"), one jax.jit of the global step (the harness's default nnx.Linear, mean
squared error, value_and_grad, nnx.Optimizer), XLA's partitioner inserting the
collectives. The kernel [D, K] is split on D and the bias on K over the mesh, the batch
on its rows, the optimizer's state as its parameters: each device keeps its part
(declared placement "input_chunks"; XLA pads a dimension that does not divide, as
torch.chunk splits it). Optimizers: optax's chains, momentum with the kit's
`dampened_trace` for torch's dampening. One program per (N, D, K, S) serves every
optimizer; its compiled programs go to JAX's persistent cache. `--dump-hlo` prints the
partitioned HLO of one shape's step and exits, so a test can see the collectives.

Mutants (--mutant, each a sharding bug the suite must reject):
  no_average           the mean loss of each device's rows, summed over the devices
  drop_remainder_rows  the batch cut to a multiple of S rows: the N % S remainder lost
  full_replica         the layer replicated on every device: a placement violation
"""

from __future__ import annotations

import argparse
from typing import Any

import sgdc_adapter
from sgdc_adapter.jax import cpu_devices

cpu_devices(8)  # before JAX is imported
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402
from jax.sharding import PartitionSpec  # noqa: E402
from sgdc_adapter.jax import (dampened_trace, harness, mse_train_step,  # noqa: E402
                              optax_optimizer, serve_spmd)

MAX_DEVICES = 8
FSDP = {"kernel": PartitionSpec("shards", None), "bias": PartitionSpec("shards")}
REPLICATED = {"kernel": PartitionSpec(), "bias": PartitionSpec()}


def optimizer_fn(o: Any) -> Any:
    """optax's chains (the kit's defaults), with torch's dampened momentum buffer."""
    if o.kind != "momentum":
        return optax_optimizer(o)
    return optax.chain(optax.add_decayed_weights(o.coupled_weight_decay),
                       dampened_trace(o.momentum, o.dampening, o.nesterov, o.fresh),
                       optax.add_decayed_weights(o.decoupled_weight_decay),
                       optax.scale_by_learning_rate(o.learning_rate))


def devices() -> int:
    """S, the size of the mesh the step is traced under."""
    return int(jax.sharding.get_abstract_mesh().shape["shards"])


def no_average(model: Any, optimizer: Any, x: Any, y: Any) -> tuple[Any, Any]:
    rows = -(-x.shape[0] // devices())  # each device's rows, as XLA splits them

    def loss_fn(m: Any) -> Any:
        r = (m(x) - y) ** 2
        return sum(jnp.mean(r[i:i + rows]) for i in range(0, x.shape[0], rows))
    loss, grads = nnx.value_and_grad(loss_fn)(model)
    optimizer.update(model, grads)
    return loss, grads


def drop_remainder_rows(model: Any, optimizer: Any, x: Any, y: Any) -> tuple[Any, Any]:
    kept = x.shape[0] // devices() * devices()
    return mse_train_step(model, optimizer, x[:kept], y[:kept])


MUTANTS = {"no_average": no_average, "drop_remainder_rows": drop_remainder_rows,
           "full_replica": None}


def step_parts(mutant: str | None) -> dict[str, Any]:
    return {"optimizer_fn": optimizer_fn, "train_step": MUTANTS.get(mutant or ""),
            "rules": REPLICATED if mutant == "full_replica" else FSDP}


def compiled_hlo(n: int, d: int, k: int, shards: int, mutant: str | None = None) -> str:
    """The partitioned HLO module of the step of (n, d, k, shards), as text."""
    h = harness(spmd=True, **step_parts(mutant))
    try:
        return h.hlo(n, d, k, shards)
    finally:
        h.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", choices=MUTANTS, help="inject one sharding bug")
    parser.add_argument("--dump-hlo", metavar="N,D,K,S",
                        help="print the compiled HLO of the step for this shape and exit")
    args = parser.parse_args()
    if args.dump_hlo:
        out = sgdc_adapter.reserve_stdout()  # stdout gets the dump alone
        out.write(compiled_hlo(*(int(v) for v in args.dump_hlo.split(",")), args.mutant).encode())
        return out.flush()
    serve_spmd(**step_parts(args.mutant), version=jax.__version__,
               name="jax-spmd" if args.mutant is None else f"jax-spmd-mutant-{args.mutant}",
               capabilities=("grads", "shard_layout"), placement="input_chunks",
               momentum=sgdc_adapter.MomentumSupport(dampening=True, nesterov=True,
                                                     weight_decay=("coupled", "decoupled")),
               adam=sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"), eps_root=True))


if __name__ == "__main__":
    main()
