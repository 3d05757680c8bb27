#!/usr/bin/env python3
"""JAX SPMD with optax.adagrad: the kernel split over the mesh by rows, the bias and
Adagrad's sum of squares placed as their parameters, the batch over the same devices."""
from sgdc_adapter.jax import cpu_devices, serve_spmd

cpu_devices(8)  # before JAX is imported: 8 CPU devices
import optax  # noqa: E402
from jax.sharding import PartitionSpec  # noqa: E402

from sgdc_adapter.jax import CaseOptimizer  # noqa: E402


def adagrad(o: CaseOptimizer) -> optax.GradientTransformation:
    # The case's hyperparameters are arrays: one compiled step serves every value.
    return optax.adagrad(o.learning_rate, initial_accumulator_value=o.initial_accumulator_value,
                         eps=o.eps_root)


serve_spmd(optimizer_fn=adagrad, name="my-jax-spmd-adagrad",
           rules={"kernel": PartitionSpec("shards", None), "bias": PartitionSpec("shards")},
           capabilities=("grads", "shard_layout"), placement="input_chunks",
           momentum=None, adam=None, adagrad={"eps_root": True},
           recipe={"optimizers": ["adagrad"]})
