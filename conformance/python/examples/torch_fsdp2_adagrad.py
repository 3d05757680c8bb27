#!/usr/bin/env python3
"""FSDP2 with torch.optim.Adagrad: your fully_shard call, the kit's rank world.

Run: sgd-conformance run --impl 'python3 torch_fsdp2_adagrad.py'. The recipe runs Adagrad
alone; the kit places each case's sum of squares into the optimizer's sharded
`state["sum"]` (a DTensor like its parameter) and gathers it back after the step.
"""
import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import fully_shard

from sgdc_adapter.torch import serve_fsdp2


def model_fn(d: int, k: int) -> nn.Module:  # module level: the ranks import it
    return nn.Linear(d, k)


def parallelize(model: nn.Module, mesh: DeviceMesh) -> None:
    fully_shard(model, mesh=mesh)
    model.set_gradient_divide_factor(1.0)  # the kit's train step sums the ranks' shares
    model.set_force_sum_reduction_for_comms(True)


def adagrad(params: list[nn.Parameter], case_optimizer: object) -> torch.optim.Optimizer:
    return torch.optim.Adagrad(params, lr=0.01)  # lr, eps, decay, sum: set per case


if __name__ == "__main__":  # the ranks import this file
    serve_fsdp2(model_fn, parallelize, adagrad, name="my-fsdp2-adagrad",
                recipe={"optimizers": ["adagrad"]}, momentum=None, adam=None,
                adagrad={"weight_decay": ["coupled"]})
