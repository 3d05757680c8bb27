#!/usr/bin/env python3
"""Flax NNX with optax.adagrad: your module, optimizer and train step, checked.

Run: sgd-conformance run --impl 'python3 flax_nnx_adagrad.py'. The recipe runs Adagrad
alone; the suite draws its lr, eps (inside the square root, as optax has it) and
initial_accumulator_value, and carried sums as well as fresh ones; the kit loads each
case's sum into scale_by_rss's `sum_of_squares` and reads it back after the step."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx

from sgdc_adapter.jax import CaseOptimizer, serve_nnx


def adagrad(o: CaseOptimizer) -> optax.GradientTransformation:
    # The case's hyperparameters are arrays: one compiled step serves every value.
    return optax.adagrad(o.learning_rate, initial_accumulator_value=o.initial_accumulator_value,
                         eps=o.eps_root)


def train_step(model: nnx.Linear, optimizer: nnx.Optimizer, x: jax.Array,
               y: jax.Array) -> tuple[jax.Array, nnx.State]:
    loss, grads = nnx.value_and_grad(lambda m: jnp.mean((m(x) - y) ** 2))(model)
    optimizer.update(model, grads)
    return loss, grads


serve_nnx(lambda d, k, rngs: nnx.Linear(d, k, rngs=rngs), adagrad, train_step,
          name="my-flax-nnx-adagrad", momentum=None, adam=None, adagrad={"eps_root": True},
          recipe={"optimizers": ["adagrad"]})
