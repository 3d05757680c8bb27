#!/usr/bin/env python3
"""The step written the ordinary PyTorch way: nn.Linear + F.mse_loss + optim.SGD (or
optim.Adam / optim.AdamW), eager on the CPU, served by the kit's torch harness
(sgdc_adapter.torch: the model and optimizers kept across cases, each case's
parameters, hyperparameters and state loaded in torch's own layout).

    conformance/python/run-adapter conformance/python/adapters/torch_step.py [--foreach on|off | --fused] [--declare-eps-root] [--mutant NAME]

Tested with torch 2.13.0 (CPU), the version scripts/install-python-deps.sh pins.

`--foreach on` makes SGD and Adam update all parameters with one multi-tensor call
(torch._foreach_add_), `--foreach off` with one op per parameter; without the option the
optimizer chooses (on the CPU: one op per parameter). `--fused` runs SGD, Adam and AdamW
by their fused CPU kernels (fused=True).

`--declare-eps-root` declares eps_root as an optax step does, and runs torch's Adam,
which has none, so the case's eps_root is left out, as a port of an optax training step
to torch.optim.AdamW leaves it out. The suite must reject it (spec, Adam).

`--mutant NAME` runs a train step with a bug that lives across steps, as a user would
write it; the suite must reject each: `no_zero_grad` (gradients accumulate across
calls), `hook_every_call` (an unscaling gradient hook registered on every call, so the
k-th call divides by the loss scale k times).

One thread: the same summation order on every run. The learning rate is a Python float:
float(case.lr) is the float32 value exactly, and `p.add_(grad, alpha=-lr)` converts it
to the parameter's dtype, exact again. No step counter is claimed: SGD keeps none.
"""

from __future__ import annotations

import argparse
import functools
from typing import Any

import sgdc_adapter

torch, = sgdc_adapter.require("torch")
from sgdc_adapter.torch import default_optimizer, serve_torch  # noqa: E402

torch.set_num_threads(1)
LOSS_SCALE = 2.0  # a power of two: scaling and unscaling are exact


def no_zero_grad(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()  # adds to the last step's .grad: optimizer.zero_grad() is missing
    optimizer.step()
    return loss


def hook_every_call(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    for p in model.parameters():  # registered anew on every call: the hooks pile up
        p.register_hook(lambda g: g / LOSS_SCALE)
    loss = torch.nn.functional.mse_loss(model(x), y)
    (loss * LOSS_SCALE).backward()
    optimizer.step()
    return loss


MUTANTS = {"no_zero_grad": no_zero_grad, "hook_every_call": hook_every_call}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--foreach", choices=("on", "off"),
                       help="the optimizer's multi-tensor update on or off (default: it chooses)")
    group.add_argument("--fused", action="store_true", help="the optimizer's fused kernel")
    parser.add_argument("--declare-eps-root", action="store_true",
                        help="declare eps_root as optax does (the suite must reject this)")
    parser.add_argument("--mutant", choices=sorted(MUTANTS), help="a train step with a bug")
    args = parser.parse_args()
    name = ("torch-fused" if args.fused else
            "torch" if args.foreach is None else f"torch-foreach-{args.foreach}")
    name += "-declared-eps-root" if args.declare_eps_root else ""
    name += f"-mutant-{args.mutant}" if args.mutant else ""
    optimizer_fn = functools.partial(
        default_optimizer, foreach=None if args.foreach is None else args.foreach == "on",
        fused=True if args.fused else None)
    serve_torch(lambda d, k: torch.nn.Linear(d, k), optimizer_fn,
                MUTANTS[args.mutant] if args.mutant else None, name=name,
                adam=sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"),
                                              eps_root=args.declare_eps_root))


if __name__ == "__main__":
    main()
