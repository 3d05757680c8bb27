#!/usr/bin/env python3
"""FSDP2 as you configure it: your fully_shard nesting, a bfloat16 MixedPrecisionPolicy
(compute in bfloat16, gradients summed in float32, float32 parameters and AdamW state),
declared stage by stage as `precision`; AdamW without decay on biases.
Run: sgd-conformance run --impl 'python3 THIS_FILE.py'"""
import torch
from torch import nn
from torch.distributed.device_mesh import DeviceMesh
from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard
from sgdc_adapter.torch import serve_fsdp2


class Model(nn.Module):
    def __init__(self, d: int, k: int) -> None:
        super().__init__()
        self.head = nn.Linear(d, k)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(x)


def parallelize(model: Model, mesh: DeviceMesh) -> None:
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    fully_shard(model.head, mesh=mesh, mp_policy=policy)  # inner first, then the root
    fully_shard(model, mesh=mesh, mp_policy=policy)
    for module in filter(lambda m: isinstance(m, FSDPModule), model.modules()):
        module.set_gradient_divide_factor(1.0)  # the kit's train step sums the ranks'
        module.set_force_sum_reduction_for_comms(True)  # gradients: in both modules


def adamw(params: list[nn.Parameter], case_optimizer: object) -> torch.optim.Optimizer:
    groups = [{"params": [p for p in params if p.ndim > 1]},  # biases: no weight decay
              {"params": [p for p in params if p.ndim == 1], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)


if __name__ == "__main__":  # the ranks import this file
    serve_fsdp2(Model, parallelize, adamw, name="my-fsdp2-adamw-bf16",
                # The policy's stages (master_dtype: float32, the parameters as model_fn made them).
                precision={"param_dtype": "bfloat16", "reduce_dtype": "float32"},
                # AdamW alone, its biases in a group without decay.
                recipe={"optimizers": ["adam"], "bias_group": {"weight_decay": 0}},
                momentum=None, adam={"weight_decay": ["decoupled"]})
