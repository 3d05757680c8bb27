#!/usr/bin/env python3
"""Eager PyTorch with AdamW and global-norm clipping: your model, optimizer and train step,
with `torch.nn.utils.clip_grad_norm_` between the backward and the step, checked.

Run: sgd-conformance run --impl 'python3 torch_eager_adamw_clipped.py'. The recipe runs
AdamW alone and declares the clipping: max_norm 1.0, torch's eps 1e-6. The suite draws
half its cases with gradients whose norm is a tenth to ten times max_norm, so the clip is
active in some and not in others; it checks the gradients before the clip (the loss's,
which the kit reads as backward leaves them) and the update made from the clipped ones.
"""
import torch
from torch import nn

from sgdc_adapter.torch import serve_torch

MAX_NORM = 1.0


def optimizer_fn(params: list[nn.Parameter], case_optimizer: object) -> torch.optim.Optimizer:
    # lr, betas, eps, weight_decay and the moments are set by the kit from each case
    return torch.optim.AdamW(params, lr=3e-4)


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor,
               y: torch.Tensor) -> torch.Tensor:
    optimizer.zero_grad()
    loss = nn.functional.mse_loss(model(x), y)
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM)
    optimizer.step()
    return loss


serve_torch(lambda d, k: nn.Sequential(nn.Linear(d, k)), optimizer_fn, train_step,
            name="torch-eager-adamw-clipped", momentum=None,
            adam={"weight_decay": ["decoupled"]},
            recipe={"optimizers": ["adam"], "clipping": {"max_norm": MAX_NORM, "eps": 1e-6}})
