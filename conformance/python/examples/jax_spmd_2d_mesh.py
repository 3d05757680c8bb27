#!/usr/bin/env python3
"""JAX SPMD over a 2-axis mesh: rows of the batch split over "data", the layer's output
features over "model" (tensor parallel), placed by nnx.with_partitioning annotations."""
from sgdc_adapter.jax import cpu_devices, serve_spmd

cpu_devices(8)  # before JAX is imported: 8 CPU devices
import jax  # noqa: E402
import numpy as np  # noqa: E402
from flax import nnx  # noqa: E402
from jax.sharding import Mesh, PartitionSpec  # noqa: E402


def mesh_fn(shards: int) -> Mesh:
    """S devices as data x model: 2 x S/2 when S is even, else 1 x S."""
    data = 2 if shards % 2 == 0 else 1
    devices = np.array(jax.devices()[:shards]).reshape(data, shards // data)
    return Mesh(devices, ("data", "model"))


def model_fn(d: int, k: int, rngs: nnx.Rngs) -> nnx.Linear:
    init = nnx.initializers
    return nnx.Linear(d, k, rngs=rngs,
                      kernel_init=nnx.with_partitioning(init.lecun_normal(), (None, "model")),
                      bias_init=nnx.with_partitioning(init.zeros_init(), ("model",)))


serve_spmd(model_fn, mesh_fn=mesh_fn, batch=PartitionSpec("data"), name="jax-spmd-2d-mesh")
