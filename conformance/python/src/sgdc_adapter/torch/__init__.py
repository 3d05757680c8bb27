"""PyTorch harness: test your own model, optimizer and training step.

You give the pieces you own; the kit does the rest:

    import torch
    from sgdc_adapter.torch import serve_torch

    def model_fn(d: int, k: int) -> torch.nn.Module:        # any module holding one nn.Linear
        return torch.nn.Sequential(torch.nn.Linear(d, k))

    def optimizer_fn(params, case_optimizer) -> torch.optim.Optimizer:
        return torch.optim.SGD(params, momentum=0.9, nesterov=True)

    def train_step(model, optimizer, x, y):                 # returns the loss before the update
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        return loss

    serve_torch(model_fn, optimizer_fn, train_step, name="my-step", momentum={"nesterov": True})

- `model_fn(d, k)` returns the module; the kit finds the one `nn.Linear` in it (ValueError
  naming what it found when there are none or several; it must be Linear(d, k) with a
  bias, float32, or a dtype the declared `precision` names, e.g. `.to(torch.bfloat16)`)
  and loads each case's kernel (transposed: torch's weight is [k, d]) and bias into it
  in place (rounded into a narrower one; read back widened to float32, exactly).
- `optimizer_fn(params, case_optimizer)` returns the optimizer over `params` (the model's
  parameters); `case_optimizer` is the case's `Optimizer` (momentum), `AdamOptimizer` or
  None (plain SGD), so the function can choose the class. Default `default_optimizer`:
  torch.optim.SGD, SGD with momentum, Adam (coupled decay) or AdamW (decoupled). Before
  every step the kit sets the case's hyperparameters (lr, momentum, dampening, nesterov,
  betas, eps, weight_decay) into each of its `param_groups`, as a scheduler sets lr (a
  tensor-valued one is filled in place), and loads the case's state in torch's own layout
  (`momentum_buffer`; `exp_avg`, `exp_avg_sq` and a float32 `step`); it reads them back
  after the step (at momentum 0, where torch keeps no buffer, the decayed gradient torch
  used).
- `train_step(model, optimizer, x, y)` runs one training step and returns the loss before
  the update (a tensor, or a Python float such as `loss.item()`); x is [n, d], y [n, k].
  Default `default_train_step`: zero_grad, forward, mse_loss, backward, step. It must
  call `optimizer.step()` once; the gradients reported are those `step()` starts with,
  or, where the recipe declares clipping (`torch.nn.utils.clip_grad_norm_` in the train
  step), those backward left before the clip scaled `.grad` in place.
- `serve_torch(...)` declares what torch.optim supports (`DECLARATIONS`: gradients, SGD
  with dampening, Nesterov and coupled decay, Adam and AdamW without eps_root, subnormals
  kept); its keywords are `sgdc_adapter.serve`'s declarations and override those (e.g.
  `adam=None`: no Adam steps). In pytest, `sgdc.check_torch(model_fn, optimizer_fn,
  train_step, ...)` runs the suite against the same pieces and takes `sgdc.check`'s
  options too.

The model lives across cases. One model per (d, k) and one optimizer per shape and
optimizer kind are made on their first case and kept for the whole run, as a training
loop keeps them, and every case is loaded into them. Only then can a bug that lives
across steps show: a train step without `optimizer.zero_grad()` adds each step's
gradients to the last ones; a hook registered inside the train step runs once more on
every call; state kept outside the optimizer carries over. Rebuilt per case, each call
would see a fresh model, and such a step would conform. The kit therefore never clears
`.grad` itself: that is the train step's job, and a bug there must show (the suite's
`determinism` and `training` properties step the same model again).

`serve_fsdp2` / `check_fsdp2` (FSDP2, `fully_shard` over a rank world) are exported here
too where this installation has them. Importing this package does not import torch;
its functions do.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._eager import (DECLARATIONS, ModelFn, OptimizerFn, TorchHarness, TrainStep,
                         default_optimizer, default_train_step, serve_torch,
                         torch_declarations)

# Exported name -> the submodule that defines it, imported on first use (it imports torch).
_EXPORTS = {name: "._eager" for name in (
    "DECLARATIONS", "ModelFn", "OptimizerFn", "TorchHarness", "TrainStep", "default_optimizer",
    "default_train_step", "serve_torch", "torch_declarations")}
if importlib.util.find_spec(__name__ + "._fsdp2") is not None:
    _EXPORTS.update({"serve_fsdp2": "._fsdp2", "check_fsdp2": "._fsdp2"})

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module, __name__), name)
