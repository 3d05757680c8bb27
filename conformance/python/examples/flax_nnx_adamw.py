#!/usr/bin/env python3
"""Flax NNX with optax.adamw, no weight decay on biases: your module, optimizer and train step.

Run: sgd-conformance run --impl 'python3 flax_nnx_adamw.py'. The kit loads each case's
parameters, Adam moments and counters into your model and its nnx.Optimizer, runs your
train step jitted and reads them back. Declared: AdamW alone, the biases' group without decay."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from sgdc_adapter.jax import CaseOptimizer, serve_nnx


class Model(nnx.Module):
    def __init__(self, d: int, k: int, rngs: nnx.Rngs) -> None:
        self.head = nnx.Linear(d, k, rngs=rngs)

    def __call__(self, x: jax.Array) -> jax.Array:
        return self.head(x)


def adamw(o: CaseOptimizer) -> optax.GradientTransformation:
    # The case's hyperparameters are arrays: one compiled step serves every value.
    no_decay_on_biases = lambda params: jax.tree.map(lambda p: p.ndim > 1, params)  # noqa: E731
    return optax.adamw(o.learning_rate, b1=o.b1, b2=o.b2, eps=o.eps, eps_root=o.eps_root,
                       weight_decay=o.weight_decay, mask=no_decay_on_biases)


def train_step(model: Model, optimizer: nnx.Optimizer, x: jax.Array,
               y: jax.Array) -> tuple[jax.Array, nnx.State]:
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss, grads


serve_nnx(Model, adamw, train_step, name="my-flax-nnx-adamw",
          adam={"weight_decay": ["decoupled"], "eps_root": True},
          recipe={"optimizers": ["adam"], "bias_group": {"weight_decay": 0}})
