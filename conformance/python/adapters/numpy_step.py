#!/usr/bin/env python3
"""Plain float32 NumPy implementation of the step: the template for adapter authors.

    conformance/python/run-adapter conformance/python/adapters/numpy_step.py [--mutant NAME]

Speaks protocol v1 on stdin/stdout through the kit (`sgdc_adapter`, installed with
`pip install ./conformance/python`). With --mutant NAME it injects one known bug, so
that the suite can show it rejects that bug; the hello reply then names the adapter
"numpy-mutant-NAME".

Step counter: kept as a NumPy int64 that saturates, declared counter=("int64",
"saturate"): at 2**63 - 1 it stays there.

SGD with momentum: every option is declared (dampening, Nesterov, coupled and decoupled
weight decay). The buffer and the direction are computed elementwise in float32, one
rounding per operation: ge = g + wd*p (coupled), the buffer
mu*buf + (1 - dampening)*ge (ge itself on the first step, and at mu = 0, where there is
no buffer to dampen), the direction ge + mu*buf'
(Nesterov) or buf', plus wd*p (decoupled), then p - lr*direction.

Adam: every option is declared (coupled and decoupled weight decay, eps_root). Written
plainly per docs/spec/step.md, elementwise in float32, one rounding per operation:
ge = g + wd*p (coupled), m' = b1*m + (1 - b1)*ge, v' = b2*v + (1 - b2)*(ge*ge) (the
moments zeros in fresh state), the bias corrections 1 - b**t with t = step + 1 computed
in float64 and rounded to float32 (as torch computes them in double), mh = m'/(1 - b1**t),
vh = v'/(1 - b2**t), a = mh/(sqrt(vh + eps_root) + eps), plus wd*p (decoupled), then
p - lr*a.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

# One BLAS thread, set before NumPy loads OpenBLAS: the suite's products are small, and a
# second thread mostly spins waiting for work (about a fifth of this adapter's CPU on two
# cores, docs/benchmarks.md). The products' bits are the same either way.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import numpy.typing as npt  # noqa: E402

import sgdc_adapter  # noqa: E402

F32 = np.float32
INT64_MAX = np.iinfo(np.int64).max
Array = npt.NDArray[np.float32]


def mse_and_grads(x: Array, y: Array, kernel: Array, bias: Array,
                  count: int) -> tuple[np.float32, Array, Array]:
    """Loss and gradients of mean((x @ kernel + bias - y)**2), the mean taken over `count`."""
    r = x @ kernel + bias - y                 # residual [n, k], float32
    loss = np.sum(r * r) / F32(count)         # float32 throughout (NumPy sums pairwise)
    grad_kernel = F32(2) * (x.T @ r) / F32(count)
    grad_bias = F32(2) * r.sum(axis=0) / F32(count)
    return loss, grad_kernel, grad_bias


def equal_weight_mean(parts: list[tuple[np.float32, Array, Array]]) -> tuple[np.float32, Array, Array]:
    """The mean of per-part (loss, grad_kernel, grad_bias), every part weighted alike."""
    count = F32(len(parts))
    return (sum((p[0] for p in parts), F32(0)) / count,
            sum((p[1] for p in parts), np.zeros_like(parts[0][1])) / count,
            sum((p[2] for p in parts), np.zeros_like(parts[0][2])) / count)


def next_step(step: int, mutant: str | None = None) -> Any:
    """The step counter after one step: an int64 that saturates at 2**63 - 1 (a mutant
    keeps it in float32 or int32, or does not advance it)."""
    if mutant == "step_not_advanced":
        return step
    if mutant == "float32_counter":  # stops at 2**24: 2**24 + 1 rounds back to 2**24
        counter = np.array([step], dtype=F32) + F32(1)
        with np.errstate(invalid="ignore"):  # back to int64 for the API: 2**63 does not fit
            return counter.astype(np.int64)[0]
    if mutant == "int32_counter":  # C casts and array arithmetic: wraps to -2**31 silently
        return (np.array([step], dtype=np.int64).astype(np.int32) + np.int32(1))[0]
    if step > INT64_MAX:
        raise sgdc_adapter.RejectCase(f"step {step} does not fit the int64 counter")
    counter = np.int64(step)
    return counter if counter == INT64_MAX else counter + np.int64(1)


def momentum_direction(case: sgdc_adapter.Case, p: Array, g: Array, buffer: Array | None,
                       mutant: str | None = None) -> tuple[Array, Array]:
    """(direction, buffer after the step) of one parameter for the case's momentum
    optimizer, elementwise in float32; `buffer` is the buffer before the step (None:
    fresh state). A momentum mutant changes one rule."""
    o = case.optimizer
    assert o is not None
    mu, wd = o.momentum, o.weight_decay
    decoupled = (o.decay == "decoupled") != (mutant == "decay_convention_swapped")
    fresh = buffer is None or mutant == "fresh_buffer_every_step"
    damp = F32(0) if mu == 0 else o.dampening  # no buffer to dampen without momentum
    ge = g if decoupled else g + wd * p
    if fresh:
        before = np.zeros_like(p)
        # The bug dampens whatever the momentum, as code that always applies it does.
        buf = (F32(1) - o.dampening) * ge if mutant == "dampening_on_first_step" else ge
    else:
        assert buffer is not None
        before = buffer
        buf = mu * buffer + (F32(1) - damp) * ge
    d = buf
    if o.nesterov:
        d = ge + mu * (before if mutant == "nesterov_without_lookahead" else buf)
    if decoupled:
        d = d + wd * p
    return d, buf


def bfloat16(values: Array) -> Array:
    """`values` rounded to bfloat16 (to nearest, ties to even), kept as float32."""
    bits = np.ascontiguousarray(values, dtype=F32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1)))
               & np.uint32(0xFFFF0000)).view(F32)
    return np.where(np.isnan(values), values, rounded).astype(F32)


def adam_direction(case: sgdc_adapter.Case, p: Array, g: Array, m: Array | None,
                   v: Array | None, mutant: str | None = None) -> tuple[Array, Array, Array]:
    """(direction, first moment after the step, second moment after the step) of one
    parameter for the case's Adam optimizer, elementwise in float32; `m` and `v` are the
    moments before the step (None: fresh state, zeros). An Adam mutant changes one rule."""
    o = case.optimizer
    assert isinstance(o, sgdc_adapter.AdamOptimizer)
    b1, b2, wd = o.b1, o.b2, o.weight_decay
    m_in = np.zeros_like(p) if m is None else m
    v_in = np.zeros_like(p) if v is None else v
    coupled = o.decay == "coupled" or mutant == "adam_decay_in_moment"
    ge = g + wd * p if coupled else g
    m_out = b1 * m_in + (F32(1) - b1) * ge
    if mutant == "adam_b2_on_gradient":
        v_out = b2 * v_in + (F32(1) - b2) * ge
    else:
        v_out = b2 * v_in + (F32(1) - b2) * (ge * ge)
    if mutant == "adam_moments_bfloat16":
        m_out, v_out = bfloat16(m_out), bfloat16(v_out)
    # t counts the steps taken, this one included; the mutant uses the counter before it.
    t = case.step if mutant == "adam_bias_correction_off_by_one" else case.step + 1
    correction1 = F32(1.0 - float(b1) ** t)   # in float64, then rounded once
    correction2 = F32(1.0 - float(b2) ** t)
    mh, vh = m_out / correction1, v_out / correction2
    if mutant == "adam_eps_inside":
        direction = mh / np.sqrt(vh + o.eps)
    else:
        direction = mh / (np.sqrt(vh + o.eps_root) + o.eps)
    if not coupled:
        direction = direction + wd * p
    if mutant == "adam_state_not_advanced":
        m_out, v_out = m_in, v_in
    return direction, m_out, v_out


def step(case: sgdc_adapter.Case, mutant: str | None = None) -> dict[str, Any]:
    x, y, kernel, bias, lr = case.x, case.y, case.kernel, case.bias, case.lr
    n, d, k, shards = case.n, case.d, case.k, case.num_shards

    if mutant == "drop_remainder_rows":
        n = (n // shards) * shards
        x, y = x[:n], y[:n]
    elif mutant == "rows_past_16_dropped":  # the kernel reads one tile of 16 rows
        x, y = x[:16], y[:16]
    count = {"mean_over_batch": n, "unbiased_mean": n * k - 1}.get(mutant or "", n * k)

    if mutant == "mean_of_shard_means":
        loss, grad_kernel, grad_bias = equal_weight_mean(
            [mse_and_grads(xs, ys, kernel, bias, len(xs) * k)
             for xs, ys in zip(np.array_split(x, shards), np.array_split(y, shards))])
    elif mutant == "chunked_mean_32":  # gradient accumulation: the last chunk may be short
        loss, grad_kernel, grad_bias = equal_weight_mean(
            [mse_and_grads(x[i:i + 32], y[i:i + 32], kernel, bias, len(x[i:i + 32]) * k)
             for i in range(0, n, 32)])
    elif mutant == "columns_past_8_dropped" and d > 8:
        used = 8 * (d // 8)
        loss, used_grad, grad_bias = mse_and_grads(x[:, :used], y, kernel[:used], bias, count)
        grad_kernel = np.zeros_like(kernel)
        grad_kernel[:used] = used_grad
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

    # The direction: the gradient for plain SGD (optax.sgd without momentum), else the
    # momentum optimizer's, with its buffer after the step.
    momentum: dict[str, Array] = {}
    dir_kernel, dir_bias = grad_kernel, grad_bias
    if isinstance(case.optimizer, sgdc_adapter.AdamOptimizer):
        dir_kernel, momentum["momentum_kernel"], momentum["second_moment_kernel"] = adam_direction(
            case, kernel, grad_kernel, case.momentum_kernel, case.second_moment_kernel, mutant)
        dir_bias, momentum["momentum_bias"], momentum["second_moment_bias"] = adam_direction(
            case, bias, grad_bias, case.momentum_bias, case.second_moment_bias, mutant)
    elif case.optimizer is not None:
        bias_buffer = case.momentum_bias
        if mutant == "buffer_shared" and case.momentum_kernel is not None:
            bias_buffer = case.momentum_kernel.reshape(-1)[:k]  # the kernel's first k elements
        dir_kernel, momentum["momentum_kernel"] = momentum_direction(
            case, kernel, grad_kernel, case.momentum_kernel, mutant)
        dir_bias, momentum["momentum_bias"] = momentum_direction(
            case, bias, grad_bias, bias_buffer, mutant)

    # The update itself: p' = p - lr * direction.
    sign = F32(1) if mutant == "wrong_sign" else F32(-1)
    rate = lr * lr if mutant == "lr_twice" else lr
    new_kernel = kernel + sign * (rate * dir_kernel)
    new_bias = bias + sign * (rate * dir_bias)

    if mutant == "bias_not_updated":
        new_bias = bias.copy()
    elif mutant == "skip_tiny_updates":
        new_kernel = np.where(np.abs(lr * dir_kernel) < 1e-6 * np.abs(kernel), kernel, new_kernel)
        new_bias = np.where(np.abs(lr * dir_bias) < 1e-6 * np.abs(bias), bias, new_bias)
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
        "step": next_step(case.step, mutant),
        **{key: v.astype(F32) for key, v in momentum.items()},
    }


MUTANTS = ("post_update_loss", "mean_over_batch", "grad_times_shards", "drop_remainder_rows",
           "mean_of_shard_means", "half_precision_grad", "reshape_not_transpose", "wrong_sign",
           "missing_factor_two", "bias_not_updated", "lr_twice", "step_not_advanced",
           "nondeterministic", "skip_tiny_updates", "unbiased_mean", "rows_past_16_dropped",
           "chunked_mean_32", "columns_past_8_dropped", "float32_counter", "int32_counter",
           "fresh_buffer_every_step", "dampening_on_first_step", "nesterov_without_lookahead",
           "decay_convention_swapped", "buffer_shared", "adam_bias_correction_off_by_one",
           "adam_eps_inside", "adam_b2_on_gradient", "adam_decay_in_moment",
           "adam_moments_bfloat16", "adam_state_not_advanced")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mutant", choices=MUTANTS, help="inject one known bug")
    mutant = parser.parse_args().mutant  # an unknown name: message on stderr, exit 2
    sgdc_adapter.serve(
        lambda case: step(case, mutant),
        name="numpy" if mutant is None else f"numpy-mutant-{mutant}",
        version=np.__version__,
        capabilities=("grads", "step_counter"),
        subnormals="ieee",  # NumPy on x86-64/aarch64 keeps IEEE subnormals (no FTZ/DAZ)
        counter=("int64", "saturate"),
        momentum={"dampening": True, "nesterov": True, "weight_decay": ("coupled", "decoupled")},
        adam={"weight_decay": ("coupled", "decoupled"), "eps_root": True},
    )


if __name__ == "__main__":
    main()
