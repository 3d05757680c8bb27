#!/usr/bin/env python3
"""The step compiled by torch.compile: Inductor on the CPU, served by the kit's torch
harness (sgdc_adapter.torch).

    conformance/python/run-adapter conformance/python/adapters/torch_compile_step.py [--dynamic]

What is compiled: the forward (nn.Linear) and the loss (F.mse_loss, the mean over the
n*k elements) as one graph under `torch.compile(backend="inductor", fullgraph=True)`
(a graph break would be an error, not a silent fall back to eager), and through it the
backward, which AOTAutograd traces and Inductor compiles with the forward. The update
is torch.optim.SGD's, p - lr*g in float32, as a training loop with a compiled model
runs it. Plain SGD only, as declared.

Shapes: each (n, d, k) is compiled once, for that shape (dynamic=False), as a training
loop with a fixed batch shape runs it: the kernels tested are those Inductor generates
for a known shape (unrolled and vectorised reductions with their remainder loops). A
run draws its cases from a pool of 12 shapes per seed (a failure's shrinking adds a few
more), above torch._dynamo's default recompile limit (8), past which a fullgraph
function fails: the limit is raised to RECOMPILE_LIMIT. `--dynamic` compiles with
dynamic=True instead: one graph with symbolic sizes serves most shapes.

The first compilation (Inductor, then g++ on the generated C++) takes seconds, each new
shape about a second more; the on-disk Inductor cache (TORCHINDUCTOR_CACHE_DIR, by
default under /tmp) makes later runs faster. Declared: float32 throughout (Inductor's
C++ is compiled with -ffp-contract=off, no unsafe math), subnormals kept, one thread.
"""

from __future__ import annotations

import argparse
from typing import Any

import sgdc_adapter

torch, = sgdc_adapter.require("torch")
from sgdc_adapter.torch import serve_torch  # noqa: E402

RECOMPILE_LIMIT = 64  # shapes compiled per run: the suite's pool of 12, shrinking, replays

torch.set_num_threads(1)


def loss_of(model: Any, x: Any, y: Any) -> Any:
    return torch.nn.functional.mse_loss(model(x), y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dynamic", action="store_true",
                        help="compile with dynamic shapes (one graph for most shapes)")
    dynamic = parser.parse_args().dynamic
    torch._dynamo.config.recompile_limit = RECOMPILE_LIMIT
    torch._dynamo.config.accumulated_recompile_limit = max(
        torch._dynamo.config.accumulated_recompile_limit, RECOMPILE_LIMIT)
    compiled_loss = torch.compile(loss_of, backend="inductor", fullgraph=True, dynamic=dynamic)

    def train_step(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
        optimizer.zero_grad()
        loss = compiled_loss(model, x, y)
        loss.backward()
        optimizer.step()
        return loss

    serve_torch(lambda d, k: torch.nn.Linear(d, k), None, train_step,
                name="torch-compile-dynamic" if dynamic else "torch-compile",
                momentum=None, adam=None)


if __name__ == "__main__":
    main()
