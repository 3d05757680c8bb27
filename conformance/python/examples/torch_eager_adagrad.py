#!/usr/bin/env python3
"""Eager PyTorch with Adagrad: your model, torch.optim.Adagrad and train step, checked.

Run: sgd-conformance run --impl 'python3 torch_eager_adagrad.py'. The recipe runs Adagrad
alone; the suite draws its lr, eps (outside the square root, as torch has it), weight
decay (coupled, torch's only kind) and initial_accumulator_value, and carried sums as well
as fresh ones; the kit loads each case's sum into the optimizer's `state["sum"]` and
reads it back after the step.
"""
import torch
from torch import nn

from sgdc_adapter.torch import serve_torch


def optimizer_fn(params: list[nn.Parameter], case_optimizer: object) -> torch.optim.Optimizer:
    # lr, eps, weight_decay and the sum are set by the kit from each case
    return torch.optim.Adagrad(params, lr=0.01)


serve_torch(lambda d, k: nn.Sequential(nn.Linear(d, k)), optimizer_fn, name="torch-eager-adagrad",
            momentum=None, adam=None, adagrad={"weight_decay": ["coupled"]},
            recipe={"optimizers": ["adagrad"]})
