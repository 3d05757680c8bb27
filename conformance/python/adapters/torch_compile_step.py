#!/usr/bin/env python3
"""The whole step compiled by torch.compile: Inductor on the CPU, one graph.

    conformance/python/run-adapter conformance/python/adapters/torch_compile_step.py [--dynamic]

What is compiled: forward (F.linear), the loss (F.mse_loss, mean over the n*k
elements), the backward (torch.func.grad_and_value: the gradients are traced into the
same graph, no autograd at run time) and the SGD update p - lr*g, as one function under
`torch.compile(backend="inductor", fullgraph=True)`: a graph break anywhere would be an
error, not a silent fall back to eager. The weight is nn.Linear's [k, d], the suite's
kernel transposed.

The learning rate is a 0-d float32 tensor, an input of the graph: as a Python float it
would be baked into the code as a constant, and every new lr would compile again.

Shapes: each (n, d, k) is compiled once, for that shape (dynamic=False), as a training
loop with a fixed batch shape runs it: the kernels tested are those Inductor generates
for a known shape (unrolled and vectorised reductions with their remainder loops). A
run of the suite draws its cases from a pool of 12 shapes per seed (a failure's
shrinking adds a few more), above torch._dynamo's default recompile limit (8), past
which a fullgraph function fails: the limit is raised to RECOMPILE_LIMIT. `--dynamic`
compiles with dynamic=True instead: one graph with symbolic sizes serves most shapes
(sizes 0 and 1 are still specialised), fewer compilations, other kernels.

The first compilation (Inductor, then g++ on the generated C++) takes seconds, each
new shape about a second more on two cores; the on-disk Inductor cache
(TORCHINDUCTOR_CACHE_DIR, by default under /tmp) makes later runs faster. A compiled
call then takes well under a millisecond.

Declared: float32 throughout (Inductor's C++ is compiled with -ffp-contract=off, no
unsafe math; the matrix products are the same BLAS calls as eager), subnormals kept
("ieee"), one thread (the same summation order every run).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import sgdc_adapter

np, torch = sgdc_adapter.require("numpy", "torch")
import torch.nn.functional as F  # noqa: E402

RECOMPILE_LIMIT = 64  # shapes compiled per run: the suite's pool of 12, shrinking, replays

torch.set_num_threads(1)  # one thread: the same summation order on every run


def loss_fn(weight: Any, bias: Any, x: Any, y: Any) -> Any:
    return F.mse_loss(F.linear(x, weight, bias), y)  # reduction="mean": over all n*k elements


def train_step(weight: Any, bias: Any, x: Any, y: Any, lr: Any) -> tuple[Any, ...]:
    """Loss (before the update), new parameters and gradients; one graph."""
    (grad_weight, grad_bias), loss = torch.func.grad_and_value(loss_fn, argnums=(0, 1))(
        weight, bias, x, y)
    return loss, weight - lr * grad_weight, bias - lr * grad_bias, grad_weight, grad_bias


def compiled_step(dynamic: bool) -> Callable[..., tuple[Any, ...]]:
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    torch._dynamo.config.accumulated_recompile_limit = max(
        torch._dynamo.config.accumulated_recompile_limit, RECOMPILE_LIMIT)
    return torch.compile(train_step, backend="inductor", fullgraph=True, dynamic=dynamic)


def step(case: sgdc_adapter.Case, compiled: Callable[..., tuple[Any, ...]]) -> dict[str, Any]:
    weight = torch.from_numpy(np.ascontiguousarray(case.kernel.T))
    bias, x, y = (torch.from_numpy(a) for a in (case.bias, case.x, case.y))
    lr = torch.tensor(case.lr, dtype=torch.float32)  # 0-d: an input, not a constant
    loss, new_weight, new_bias, grad_weight, grad_bias = compiled(weight, bias, x, y, lr)
    return {"loss": loss.numpy(), "kernel": new_weight.numpy().T, "bias": new_bias.numpy(),
            "grad_kernel": grad_weight.numpy().T, "grad_bias": grad_bias.numpy()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dynamic", action="store_true",
                        help="compile with dynamic shapes (one graph for most shapes)")
    dynamic = parser.parse_args().dynamic
    compiled = compiled_step(dynamic)
    sgdc_adapter.serve(lambda case: step(case, compiled),
                       name="torch-compile-dynamic" if dynamic else "torch-compile",
                       version=torch.__version__, capabilities=("grads",), subnormals="ieee")


if __name__ == "__main__":
    main()
