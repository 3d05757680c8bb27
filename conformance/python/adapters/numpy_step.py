#!/usr/bin/env python3
"""Plain float32 NumPy implementation of the step: the template for adapter authors.

    python3 conformance/python/adapters/numpy_step.py [--mutant NAME]

Speaks protocol v1 on stdin/stdout (see sgdc_adapter.py). With --mutant NAME it
injects one known bug, so that the suite can show it rejects that bug; the hello
reply then names the adapter "numpy-mutant-NAME".
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import sgdc_adapter  # noqa: E402  (first: it reserves stdout for the protocol)
import numpy as np  # noqa: E402

F32 = np.float32


def mse_and_grads(x, y, kernel, bias, count):
    """Loss and gradients of mean((x @ kernel + bias - y)**2), the mean taken over `count`."""
    r = x @ kernel + bias - y                 # residual [n, k], float32
    loss = np.sum(r * r) / F32(count)         # float32 throughout (NumPy sums pairwise)
    grad_kernel = F32(2) * (x.T @ r) / F32(count)
    grad_bias = F32(2) * r.sum(axis=0) / F32(count)
    return loss, grad_kernel, grad_bias


def step(case, mutant=None):
    x, y, kernel, bias, lr = case.x, case.y, case.kernel, case.bias, case.lr
    n, k, shards = case.n, case.k, case.num_shards

    if mutant == "drop_remainder_rows":
        n = (n // shards) * shards
        x, y = x[:n], y[:n]
    count = {"mean_over_batch": n, "unbiased_mean": n * k - 1}.get(mutant, n * k)

    if mutant == "mean_of_shard_means":
        parts = [mse_and_grads(xs, ys, kernel, bias, len(xs) * k)
                 for xs, ys in zip(np.array_split(x, shards), np.array_split(y, shards))]
        loss, grad_kernel, grad_bias = (sum(p[i] for p in parts) / F32(shards) for i in range(3))
    else:
        loss, grad_kernel, grad_bias = mse_and_grads(x, y, kernel, bias, count)

    if mutant == "reshape_not_transpose":
        r = x @ kernel + bias - y
        grad_kernel = F32(2) * (x.reshape(case.d, n) @ r) / F32(count)
    elif mutant == "missing_factor_two":
        grad_kernel, grad_bias = grad_kernel / F32(2), grad_bias / F32(2)
    elif mutant == "grad_times_shards":
        grad_kernel, grad_bias = grad_kernel * F32(shards), grad_bias * F32(shards)
    elif mutant == "half_precision_grad":
        grad_kernel = grad_kernel.astype(np.float16).astype(F32)
        grad_bias = grad_bias.astype(np.float16).astype(F32)

    # The SGD update itself: p' = p - lr * g (optax.sgd without momentum).
    sign = F32(1) if mutant == "wrong_sign" else F32(-1)
    rate = lr * lr if mutant == "lr_twice" else lr
    new_kernel = kernel + sign * (rate * grad_kernel)
    new_bias = bias + sign * (rate * grad_bias)

    if mutant == "bias_not_updated":
        new_bias = bias.copy()
    elif mutant == "skip_tiny_updates":
        new_kernel = np.where(np.abs(lr * grad_kernel) < 1e-6 * np.abs(kernel), kernel, new_kernel)
        new_bias = np.where(np.abs(lr * grad_bias) < 1e-6 * np.abs(bias), bias, new_bias)
    elif mutant == "nondeterministic":
        rng = np.random.default_rng()
        i = rng.integers(new_kernel.size)
        towards = F32(np.inf) if rng.integers(2) else F32(-np.inf)
        new_kernel.flat[i] = np.nextafter(new_kernel.flat[i], towards)
    if mutant == "post_update_loss":
        loss = mse_and_grads(x, y, new_kernel, new_bias, count)[0]

    return {
        "loss": F32(loss),
        "kernel": new_kernel.astype(F32),
        "bias": new_bias.astype(F32),
        "grad_kernel": grad_kernel.astype(F32),
        "grad_bias": grad_bias.astype(F32),
        "step": case.step if mutant == "step_not_advanced" else case.step + 1,
    }


MUTANTS = ("post_update_loss", "mean_over_batch", "grad_times_shards", "drop_remainder_rows",
           "mean_of_shard_means", "half_precision_grad", "reshape_not_transpose", "wrong_sign",
           "missing_factor_two", "bias_not_updated", "lr_twice", "step_not_advanced",
           "nondeterministic", "skip_tiny_updates", "unbiased_mean")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", choices=MUTANTS, help="inject one known bug")
    mutant = parser.parse_args().mutant  # an unknown name: message on stderr, exit 2
    sgdc_adapter.serve(
        lambda case: step(case, mutant),
        name="numpy" if mutant is None else f"numpy-mutant-{mutant}",
        version=np.__version__,
        capabilities=("grads", "step_counter"),
        subnormals="ieee",  # NumPy on x86-64/aarch64 keeps IEEE subnormals (no FTZ/DAZ)
    )


if __name__ == "__main__":
    main()
