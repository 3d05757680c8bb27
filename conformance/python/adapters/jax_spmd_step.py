#!/usr/bin/env python3
"""The step sharded with JAX SPMD over num_shards CPU devices (FSDP / ZeRO-3 placement),
on the kit's harness (`sgdc_adapter.jax.serve_spmd`). Options: [--mutant NAME] [--clip] |
[--dump-hlo N,D,K,S] (print one shape's partitioned HLO and exit, for the HLO test).

A case with num_shards = S runs one jax.jit of the global step (the harness's
nnx.Linear, mean squared error, nnx.Optimizer) on the first S of 8 host devices, XLA
inserting the collectives; the kernel [D, K] split on D, the bias on K, the batch on
rows, the state as its parameters ("input_chunks": XLA pads as torch.chunk splits).
optax's chains, `dampened_trace` for torch's dampening. One program per (N, D, K, S)
serves every optimizer, kept in JAX's persistent cache. Mutants, each a sharding bug the
suite must reject: no_average (each device's mean loss, summed over devices),
drop_remainder_rows (the batch cut to a multiple of S rows), full_replica (the layer
replicated on every device: a placement violation).

--clip puts `optax.clip_by_global_norm(MAX_NORM)` first in every chain, as a training
script chains it before its optimizer, and declares it: the recipe's clipping with
max_norm MAX_NORM and optax's eps, 0 (docs/spec/step.md, "Gradient clipping"). Under SPMD
the norm is a sum over the global arrays, which XLA partitions.
"""

import argparse
from typing import Any

import sgdc_adapter
from sgdc_adapter.jax import cpu_devices

MAX_DEVICES = 8
cpu_devices(MAX_DEVICES)  # before JAX is imported
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import optax  # noqa: E402
from flax import nnx  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402
from sgdc_adapter.jax import (dampened_trace, harness, mse_train_step,  # noqa: E402
                              optax_optimizer, serve_spmd)



def optimizer_fn(o: Any) -> Any:
    """optax's chains (the kit's defaults), with torch's dampened momentum buffer."""
    if o.kind != "momentum":
        return optax_optimizer(o)
    return optax.chain(optax.add_decayed_weights(o.coupled_weight_decay),
                       dampened_trace(o.momentum, o.dampening, o.nesterov, o.fresh),
                       optax.add_decayed_weights(o.decoupled_weight_decay),
                       optax.scale_by_learning_rate(o.learning_rate))


MAX_NORM = 1.0  # --clip's max_norm


def clipped_optimizer_fn(o: Any) -> Any:
    """`optimizer_fn`'s chain with optax.clip_by_global_norm(MAX_NORM) before it."""
    return optax.chain(optax.clip_by_global_norm(MAX_NORM), optimizer_fn(o))


def devices() -> int:  # S, the size of the mesh the step is traced under
    return int(jax.sharding.get_abstract_mesh().shape["shards"])


def no_average(model: Any, optimizer: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """Each device's mean loss, summed: a psum of the means where their mean is due."""
    rows = -(-x.shape[0] // devices())  # each device's rows, as XLA splits them
    parts = range(0, x.shape[0], rows)
    loss, grads = nnx.value_and_grad(
        lambda m: sum(jnp.mean((m(x[i:i + rows]) - y[i:i + rows]) ** 2) for i in parts))(model)
    optimizer.update(model, grads)
    return loss, grads


def drop_remainder_rows(model: Any, optimizer: Any, x: Any, y: Any) -> tuple[Any, Any]:
    """The batch cut to a multiple of S rows, as a sampler that drops the last would."""
    kept = x.shape[0] // devices() * devices()
    return mse_train_step(model, optimizer, x[:kept], y[:kept])


MUTANTS = {"no_average": no_average, "drop_remainder_rows": drop_remainder_rows,
           "full_replica": None}
# The optimizers served: the harness builds their chains alone.
OPTIMIZERS = {"momentum": sgdc_adapter.MomentumSupport(dampening=True, nesterov=True,
                                                       weight_decay=("coupled", "decoupled")),
              "adam": sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"),
                                               eps_root=True)}


def step_parts(mutant: str | None, clip: bool = False) -> dict[str, Any]:
    """The adapter's pieces for `serve_spmd` / `harness`: its mutant's train step, rules,
    and with `clip` the clipping chain."""
    rules = ({"kernel": P(), "bias": P()} if mutant == "full_replica"
             else {"kernel": P("shards", None), "bias": P("shards")})
    return {"optimizer_fn": clipped_optimizer_fn if clip else optimizer_fn,
            "train_step": MUTANTS.get(mutant or ""), "rules": rules}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", choices=MUTANTS, help="inject one sharding bug")
    parser.add_argument("--clip", action="store_true",
                        help=f"clip by the global norm ({MAX_NORM}) before the optimizer")
    parser.add_argument("--dump-hlo", metavar="N,D,K,S", help="print one shape's HLO, exit")
    args = parser.parse_args()
    if args.dump_hlo:
        out = sgdc_adapter.reserve_stdout()  # stdout gets the dump alone
        with harness(spmd=True, declarations=OPTIMIZERS,
                     **step_parts(args.mutant, args.clip)) as h:
            out.write(h.hlo(*map(int, args.dump_hlo.split(","))).encode())
        return out.flush()
    name = "jax-spmd" if args.mutant is None else f"jax-spmd-mutant-{args.mutant}"
    serve_spmd(**step_parts(args.mutant, args.clip), version=jax.__version__,
               name=name + ("-clip" if args.clip else ""),
               capabilities=("grads", "shard_layout"), placement="input_chunks",
               **({"recipe": {"clipping": {"max_norm": MAX_NORM, "eps": 0.0}}}
                  if args.clip else {}),
               **OPTIMIZERS)


if __name__ == "__main__":
    main()
