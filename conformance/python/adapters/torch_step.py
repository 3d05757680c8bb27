#!/usr/bin/env python3
"""The step written the ordinary PyTorch way: nn.Linear + F.mse_loss + optim.SGD, on CPU.

    conformance/python/run-adapter conformance/python/adapters/torch_step.py

Tested with torch 2.13.0 (CPU), the version scripts/install-python-deps.sh pins; the
code also runs on torch 1.13.

Layout: nn.Linear stores `weight` as [k, d], the suite's kernel transposed; the
adapter copies kernel.T in and reports weight.T (and weight.grad.T) back.

Learning rate: SGD takes a Python float. float(case.lr) is the float32 value exactly,
and SGD's `p.add_(grad, alpha=-lr)` converts alpha to the parameter's dtype, which is
exact again, so the update is p - lr * g in float32 (possibly fused into one rounding).

Step counter: torch.optim.SGD without momentum keeps no step count, so the adapter
does not claim "step_counter".
"""

from __future__ import annotations

from typing import Any

import sgdc_adapter

torch, = sgdc_adapter.require("torch")

torch.set_num_threads(1)  # one thread: the same summation order on every run


def step(case: sgdc_adapter.Case) -> dict[str, Any]:
    model = torch.nn.Linear(case.d, case.k)  # float32 by default
    with torch.no_grad():
        model.weight.copy_(torch.from_numpy(case.kernel.T.copy()))
        model.bias.copy_(torch.from_numpy(case.bias))
    x, y = torch.from_numpy(case.x), torch.from_numpy(case.y)
    optimizer = torch.optim.SGD(model.parameters(), lr=float(case.lr))

    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)  # reduction="mean": over all n*k elements
    loss.backward()
    optimizer.step()

    return {
        "loss": loss.detach().numpy(),
        "kernel": model.weight.detach().numpy().T,
        "bias": model.bias.detach().numpy(),
        "grad_kernel": model.weight.grad.numpy().T,
        "grad_bias": model.bias.grad.numpy(),
    }


if __name__ == "__main__":
    sgdc_adapter.serve(step, name="torch", version=torch.__version__,
                       capabilities=("grads",), subnormals="ieee")
