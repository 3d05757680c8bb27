"""The eager harness: the user's model, optimizer and train step, one model per shape
kept for the whole run, each case loaded into it (see the package docstring)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, NoReturn, Unpack

import torch
import torch.nn.functional as F

from .. import serve
from .._codec import AdagradOptimizer, AdamOptimizer, Case, Optimizer
from .._serve import AdamSupport, Declarations, MomentumSupport, Precision, precision_declaration
from ._state import (GradientCapture, check_linear, find_linear, linear_parameters, load_case,
                     optimizer_kind, outputs, parameter_dtypes)

ModelFn = Callable[[int, int], torch.nn.Module]
CaseOptimizer = Optimizer | AdamOptimizer | AdagradOptimizer | None
OptimizerFn = Callable[[list[torch.nn.Parameter], CaseOptimizer], torch.optim.Optimizer]
TrainStep = Callable[[torch.nn.Module, torch.optim.Optimizer, torch.Tensor, torch.Tensor], object]

# What torch.optim's SGD, Adam and AdamW take, and so what `serve_torch` declares unless
# told otherwise: SGD's dampening, Nesterov and coupled decay (added to the gradient);
# Adam's coupled decay and AdamW's decoupled one; no eps_root (torch has none); float32
# with subnormals kept; gradients reported, no step counter (SGD keeps none).
DECLARATIONS: Declarations = {
    "capabilities": ("grads",), "subnormals": "ieee",
    "momentum": MomentumSupport(dampening=True, nesterov=True, weight_decay=("coupled",)),
    "adam": AdamSupport(weight_decay=("coupled", "decoupled"), eps_root=False)}


def torch_declarations(declarations: Mapping[str, Any]) -> Declarations:
    """DECLARATIONS with the caller's own on top (e.g. momentum=None: no momentum steps)."""
    merged: dict[str, Any] = {**DECLARATIONS, **declarations}
    return merged  # type: ignore[return-value]


def default_optimizer(params: Iterable[torch.nn.Parameter], case_optimizer: CaseOptimizer, *,
                      foreach: bool | None = None, fused: bool | None = None
                      ) -> torch.optim.Optimizer:
    """torch.optim.SGD for plain SGD; SGD(momentum, dampening, nesterov, weight_decay)
    for a momentum case; Adam (coupled decay) or AdamW (decoupled) for an Adam case;
    Adagrad (coupled decay, eps outside the root, lr_decay 0) for an Adagrad case.
    `foreach` and `fused` choose torch's implementation (None: torch chooses). The
    learning rate and every later case's hyperparameters are set into the param groups
    by the kit."""
    options: dict[str, Any] = {"foreach": foreach}
    if fused is not None:  # torch 1.13's SGD has no `fused`
        options["fused"] = fused
    o = case_optimizer
    if isinstance(o, AdagradOptimizer):
        if o.decay == "decoupled" and o.weight_decay != 0:
            raise ValueError("torch.optim.Adagrad decays coupled only; declare "
                             "adagrad={'weight_decay': ['coupled']}")
        return torch.optim.Adagrad(params, eps=float(o.eps), weight_decay=float(o.weight_decay),
                                   initial_accumulator_value=float(o.initial_accumulator_value),
                                   foreach=foreach)
    if isinstance(o, AdamOptimizer):
        cls = torch.optim.AdamW if o.decay == "decoupled" else torch.optim.Adam
        return cls(params, betas=(float(o.b1), float(o.b2)), eps=float(o.eps),
                   weight_decay=float(o.weight_decay), **options)
    if isinstance(o, Optimizer):
        return torch.optim.SGD(params, momentum=float(o.momentum), dampening=float(o.dampening),
                               nesterov=bool(o.nesterov), weight_decay=float(o.weight_decay),
                               **options)
    return torch.optim.SGD(params, **options)


def default_train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                       x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The usual step: zero_grad, forward, mse_loss (the mean over all n*k elements),
    backward, step; returns the loss before the update."""
    optimizer.zero_grad()
    loss = F.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


class TorchHarness:
    """The step function of `serve_torch`: `harness(case)` runs one case through the
    user's objects and returns its outputs.

    One model per (d, k), made by `model_fn(d, k)` on the shape's first case, and one
    optimizer per shape and optimizer kind (plain SGD, momentum, Adam by decay
    convention), made by `optimizer_fn(params, case.optimizer)` on its first case; all
    kept for the whole run, as a training loop keeps them. `precision`: the declared
    one (`serve`'s keyword), under which the Linear may be stored in a dtype it names
    (bfloat16, float16) rather than float32."""

    def __init__(self, model_fn: ModelFn, optimizer_fn: OptimizerFn | None = None,
                 train_step: TrainStep | None = None, *,
                 precision: Precision | None = None) -> None:
        for what, fn in (("model_fn", model_fn), ("optimizer_fn", optimizer_fn),
                         ("train_step", train_step)):
            if fn is not None and not callable(fn):
                raise ValueError(f"{what} must be callable, got {fn!r}")
        self.model_fn = model_fn
        self.optimizer_fn: OptimizerFn = optimizer_fn or default_optimizer
        self.train_step: TrainStep = train_step or default_train_step
        self.dtypes = parameter_dtypes(None if precision is None
                                       else precision_declaration(precision))
        self.models: dict[tuple[int, int], tuple[torch.nn.Module, torch.nn.Linear]] = {}
        self.optimizers: dict[tuple[Any, ...], tuple[torch.optim.Optimizer, GradientCapture]] = {}

    def model(self, d: int, k: int) -> tuple[torch.nn.Module, torch.nn.Linear]:
        """The shape's model and the Linear in it."""
        if (d, k) not in self.models:
            model = self.model_fn(d, k)
            linear = find_linear(model)
            check_linear(linear, d, k, self.dtypes)
            self.models[d, k] = model, linear
        return self.models[d, k]

    def optimizer(self, case: Case) -> tuple[torch.optim.Optimizer, GradientCapture]:
        """The optimizer for the case's shape and kind, and its gradient capture."""
        key = (case.d, case.k, *optimizer_kind(case))
        if key not in self.optimizers:
            model, linear = self.model(case.d, case.k)
            optimizer = self.optimizer_fn(list(model.parameters()), case.optimizer)
            if not isinstance(optimizer, torch.optim.Optimizer):
                raise ValueError(f"optimizer_fn must return a torch.optim.Optimizer, got "
                                 f"{type(optimizer).__name__}")
            self.optimizers[key] = optimizer, GradientCapture(optimizer, linear)
        return self.optimizers[key]

    def __call__(self, case: Case) -> dict[str, Any]:
        model, linear = self.model(case.d, case.k)
        optimizer, capture = self.optimizer(case)
        before = {name: torch.from_numpy(v) for name, v in load_case(linear, optimizer, case).items()}
        capture.arm(after_backward=case.clip_max_norm is not None)
        loss = self.train_step(model, optimizer, torch.from_numpy(case.x),
                               torch.from_numpy(case.y))
        params = linear_parameters(linear)
        return outputs(case, loss, params, capture.take(),
                       lambda name: optimizer.state[params[name]], before)


def serve_torch(model_fn: ModelFn, optimizer_fn: OptimizerFn | None = None,
                train_step: TrainStep | None = None, *, name: str = "torch",
                version: str | None = None, **declarations: Unpack[Declarations]) -> NoReturn:
    """Serve the user's PyTorch step over the protocol on stdin/stdout (see the package
    docstring). `declarations` override DECLARATIONS, what torch.optim supports;
    `version` defaults to torch's."""
    serve(TorchHarness(model_fn, optimizer_fn, train_step,
                       precision=declarations.get("precision")), name=name,
          version=version or torch.__version__, **torch_declarations(declarations))
