#!/usr/bin/env python3
"""The step written the ordinary PyTorch way: nn.Linear + F.mse_loss + optim.SGD, on CPU.

    conformance/python/run-adapter conformance/python/adapters/torch_step.py [--foreach on|off]

Tested with torch 2.13.0 (CPU), the version scripts/install-python-deps.sh pins; the
code also runs on torch 1.13.

Layout: nn.Linear stores `weight` as [k, d], the suite's kernel transposed; the
adapter copies kernel.T in and reports weight.T (and weight.grad.T) back.

Learning rate: SGD takes a Python float. float(case.lr) is the float32 value exactly,
and SGD's `p.add_(grad, alpha=-lr)` converts alpha to the parameter's dtype, which is
exact again, so the update is p - lr * g in float32 (possibly fused into one rounding).

Optimizer implementation: `--foreach on` makes SGD update all parameters with one
multi-tensor call (torch._foreach_add_), `--foreach off` with one add_ per parameter;
without the option SGD chooses (on the CPU: one add_ per parameter).

Step counter: torch.optim.SGD without momentum keeps no step count, so the adapter
does not claim "step_counter".
"""

from __future__ import annotations

import argparse
from typing import Any

import sgdc_adapter

torch, = sgdc_adapter.require("torch")

torch.set_num_threads(1)  # one thread: the same summation order on every run


def step(case: sgdc_adapter.Case, foreach: bool | None = None) -> dict[str, Any]:
    model = torch.nn.Linear(case.d, case.k)  # float32 by default
    with torch.no_grad():
        model.weight.copy_(torch.from_numpy(case.kernel.T.copy()))
        model.bias.copy_(torch.from_numpy(case.bias))
    x, y = torch.from_numpy(case.x), torch.from_numpy(case.y)
    optimizer = torch.optim.SGD(model.parameters(), lr=float(case.lr), foreach=foreach)

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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--foreach", choices=("on", "off"),
                        help="SGD's multi-tensor update on or off (default: SGD chooses)")
    choice = parser.parse_args().foreach
    foreach = None if choice is None else choice == "on"
    sgdc_adapter.serve(lambda case: step(case, foreach),
                       name="torch" if choice is None else f"torch-foreach-{choice}",
                       version=torch.__version__, capabilities=("grads",), subnormals="ieee")


if __name__ == "__main__":
    main()
