#!/usr/bin/env python3
"""Eager PyTorch with Nesterov SGD and no weight decay on biases: your model, optimizer
and train step, checked.

Run: sgd-conformance run --impl 'python3 torch_eager_nesterov.py'. The suite sends plain
SGD and momentum steps, Nesterov's among them; the kit sets each case's lr, momentum,
nesterov and weight decay into the optimizer's param groups, and the recipe declares the
biases' group without decay (leave it out and the step is rejected).
"""
import torch
from torch import nn

import sgdc_adapter
from sgdc_adapter.torch import serve_torch


class Model(nn.Module):
    def __init__(self, d: int, k: int) -> None:
        super().__init__()
        self.head = nn.Linear(d, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x)


def optimizer_fn(params: list[nn.Parameter], case_optimizer: object) -> torch.optim.Optimizer:
    # lr, momentum and weight_decay are set by the kit from each case
    groups = [{"params": [p for p in params if p.ndim > 1]},
              {"params": [p for p in params if p.ndim == 1], "weight_decay": 0.0}]
    return torch.optim.SGD(groups, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)


serve_torch(lambda d, k: Model(d, k), optimizer_fn, name="torch-eager-nesterov",
            momentum=sgdc_adapter.MomentumSupport(nesterov=True, weight_decay=("coupled",)),
            adam=None, recipe={"bias_group": {"weight_decay": 0}})
