#!/usr/bin/env python3
"""The step written the ordinary PyTorch way: nn.Linear + F.mse_loss + optim.SGD (or
optim.Adam / optim.AdamW), on CPU.

    conformance/python/run-adapter conformance/python/adapters/torch_step.py [--foreach on|off | --fused]

Tested with torch 2.13.0 (CPU), the version scripts/install-python-deps.sh pins; the
code also runs on torch 1.13.

Layout: nn.Linear stores `weight` as [k, d], the suite's kernel transposed; the
adapter copies kernel.T in and reports weight.T (and weight.grad.T) back.

Learning rate: SGD takes a Python float. float(case.lr) is the float32 value exactly,
and SGD's `p.add_(grad, alpha=-lr)` converts alpha to the parameter's dtype, which is
exact again, so the update is p - lr * g in float32 (possibly fused into one rounding).

Optimizer implementation: `--foreach on` makes SGD (and Adam) update all parameters with
one multi-tensor call (torch._foreach_add_), `--foreach off` with one add_ per parameter;
without the option the optimizer chooses (on the CPU: one op per parameter). `--fused`
runs Adam and AdamW by their fused kernels (fused=True, which torch 2.13 has on the CPU
too; plain SGD steps then take SGD's fused kernel as well).

Adam: declared with coupled weight decay (`torch.optim.Adam(lr, betas, eps,
weight_decay)`: the decay added to the gradient before the moments) and decoupled
(`torch.optim.AdamW`: `param.mul_(1 - lr*wd)` before the update), without eps_root
(torch has none). The case's state is loaded into the optimizer as torch keeps it:
`exp_avg` the first moment, `exp_avg_sq` the second, and `step` a float32 tensor holding
case.step (torch increments it before use: t = step + 1; a step above 2**24 is rounded
to float32, as torch's own counter would hold it). A case in fresh state at step 0 runs
an optimizer as constructed, which makes its state itself; fresh state at a later step
loads zeros with the step. The moments after the step are read back from
optimizer.state.

Momentum: `torch.optim.SGD(lr, momentum, dampening, nesterov=..., weight_decay=wd)`, coupled decay
(torch's SGD adds `wd * p` to the gradient), heavy ball or Nesterov, the buffer loaded
into `optimizer.state[p]["momentum_buffer"]` (absent in fresh state: torch's first step
copies the decayed gradient, as the spec's fresh buffer) and read back after the step.
Dampening is declared: torch dampens a carried buffer, `mu buf + (1 - dampening) ge`, not
a fresh one, as the spec does. With momentum 0 torch keeps no buffer and ignores the
dampening (spec 1.4: buf' = ge there); the adapter reports the decayed gradient torch
used, `grad.add(param, alpha=wd)`, which is the spec's buffer.

Under optax's convention (`--declare-eps-root`): the adapter declares eps_root, as an
optax step does, and runs torch's Adam, which has none, so the case's eps_root is left
out, as a port of an optax training step to torch.optim.AdamW leaves it out. The suite
must reject it: with eps_root > 0 the step is another function (spec, Adam).

Step counter: torch.optim.SGD without momentum keeps no step count, so the adapter
does not claim "step_counter" (Adam's float32 `step` is not reported either: the
capability promises it on every result).
"""

from __future__ import annotations

import argparse
from typing import Any

import sgdc_adapter

torch, = sgdc_adapter.require("torch")

torch.set_num_threads(1)  # one thread: the same summation order on every run


def fused_option(fused: bool | None) -> dict[str, bool]:
    """The `fused` keyword only when asked for (torch 1.13's SGD has none)."""
    return {} if fused is None else {"fused": fused}


def adam(case: sgdc_adapter.Case, model: Any, foreach: bool | None,
         fused: bool | None, ignore_eps_root: bool = False) -> Any:
    """torch.optim.Adam (coupled decay) or AdamW (decoupled), with the case's state;
    `ignore_eps_root`: a case's eps_root is left out (torch has none) instead of refused."""
    o = case.optimizer
    assert isinstance(o, sgdc_adapter.AdamOptimizer)
    if o.eps_root != 0 and not ignore_eps_root:  # the kit rejects it first unless declared
        raise sgdc_adapter.RejectCase("torch's Adam has no eps_root")
    cls = torch.optim.AdamW if o.decay == "decoupled" else torch.optim.Adam
    optimizer = cls(model.parameters(), lr=float(case.lr), betas=(float(o.b1), float(o.b2)),
                    eps=float(o.eps), weight_decay=float(o.weight_decay), foreach=foreach,
                    **fused_option(fused))
    if case.fresh_state and case.step == 0:
        return optimizer  # as constructed: the first step makes the state itself
    state = ((model.weight, case.momentum_kernel, case.second_moment_kernel, True),
             (model.bias, case.momentum_bias, case.second_moment_bias, False))
    for param, m, v, transposed in state:
        def load(moment: Any) -> Any:
            if moment is None:
                return torch.zeros_like(param, memory_format=torch.preserve_format)
            return torch.from_numpy((moment.T if transposed else moment).copy())
        optimizer.state[param] = {
            # torch keeps `step` as a float32 tensor on the CPU (_get_scalar_dtype).
            "step": torch.tensor(float(case.step), dtype=torch.float32),
            "exp_avg": load(m), "exp_avg_sq": load(v)}
    return optimizer


def step(case: sgdc_adapter.Case, foreach: bool | None = None,
         fused: bool | None = None, ignore_eps_root: bool = False) -> dict[str, Any]:
    model = torch.nn.Linear(case.d, case.k)  # float32 by default
    with torch.no_grad():
        model.weight.copy_(torch.from_numpy(case.kernel.T.copy()))
        model.bias.copy_(torch.from_numpy(case.bias))
    x, y = torch.from_numpy(case.x), torch.from_numpy(case.y)
    momentum = isinstance(case.optimizer, sgdc_adapter.Optimizer)
    before = {}
    if isinstance(case.optimizer, sgdc_adapter.AdamOptimizer):
        optimizer = adam(case, model, foreach, fused, ignore_eps_root)
    elif momentum:
        o = case.optimizer
        optimizer = torch.optim.SGD(model.parameters(), lr=float(case.lr),
                                    momentum=float(o.momentum), dampening=float(o.dampening),
                                    nesterov=bool(o.nesterov),
                                    weight_decay=float(o.weight_decay), foreach=foreach,
                                    **fused_option(fused))
        before = {name: p.detach().clone() for name, p in
                  (("kernel", model.weight), ("bias", model.bias))}
        if not case.fresh_state and o.momentum != 0:
            for param, buf, transposed in ((model.weight, case.momentum_kernel, True),
                                           (model.bias, case.momentum_bias, False)):
                optimizer.state[param] = {
                    "momentum_buffer": torch.from_numpy((buf.T if transposed else buf).copy())}
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=float(case.lr), foreach=foreach,
                                    **fused_option(fused))

    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)  # reduction="mean": over all n*k elements
    loss.backward()
    # The gradients as backward left them: SGD's foreach path with Nesterov adds
    # momentum * buffer into the .grad tensors in place (torch 2.13), so read them first.
    grads = {"kernel": model.weight.grad.detach().clone(), "bias": model.bias.grad.detach().clone()}
    optimizer.step()

    out = {
        "loss": loss.detach().numpy(),
        "kernel": model.weight.detach().numpy().T,
        "bias": model.bias.detach().numpy(),
        "grad_kernel": grads["kernel"].numpy().T,
        "grad_bias": grads["bias"].numpy(),
    }
    if momentum:
        for name, param in (("kernel", model.weight), ("bias", model.bias)):
            buf = optimizer.state[param].get("momentum_buffer")
            if buf is None:  # momentum 0: no buffer; the decayed gradient torch used
                buf = grads[name].add(before[name], alpha=float(case.optimizer.weight_decay))
            b = buf.detach().numpy()
            out["momentum_" + name] = b.T if name == "kernel" else b
    if isinstance(case.optimizer, sgdc_adapter.AdamOptimizer):
        for name, param in (("kernel", model.weight), ("bias", model.bias)):
            state = optimizer.state[param]
            m, v = state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()
            out["momentum_" + name] = m.T if name == "kernel" else m
            out["second_moment_" + name] = v.T if name == "kernel" else v
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--foreach", choices=("on", "off"),
                       help="the optimizer's multi-tensor update on or off (default: it chooses)")
    group.add_argument("--fused", action="store_true",
                       help="the optimizer's fused kernel (fused=True)")
    parser.add_argument("--declare-eps-root", action="store_true",
                        help="declare eps_root as optax does; torch's Adam leaves it out "
                             "(the suite must reject this)")
    args = parser.parse_args()
    foreach = None if args.foreach is None else args.foreach == "on"
    fused = True if args.fused else None
    name = ("torch-fused" if args.fused else
            "torch" if args.foreach is None else f"torch-foreach-{args.foreach}")
    if args.declare_eps_root:
        name += "-declared-eps-root"
    sgdc_adapter.serve(lambda case: step(case, foreach, fused, args.declare_eps_root), name=name,
                       version=torch.__version__, capabilities=("grads",), subnormals="ieee",
                       momentum=sgdc_adapter.MomentumSupport(dampening=True, nesterov=True,
                                                             weight_decay=("coupled",)),
                       adam=sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"),
                                                     eps_root=args.declare_eps_root))


if __name__ == "__main__":
    main()
