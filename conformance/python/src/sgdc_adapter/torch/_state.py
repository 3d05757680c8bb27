"""A case in torch's own terms: the Linear found in a model, the case's parameters and
optimizer state loaded into it and its optimizer as torch keeps them, and the step's
outputs read back in the suite's layout.

Shared by the eager and the sharded harnesses. The layout facts, in one place:

- nn.Linear keeps `weight` as [k, d], the suite's kernel [d, k] transposed; the bias is
  [k] in both.
- torch.optim.SGD keeps the momentum buffer as `state[p]["momentum_buffer"]`, made from
  the decayed gradient on the first step (fresh state: no entry), and keeps none at
  momentum 0, where the spec's buffer is the decayed gradient `grad.add(param,
  alpha=weight_decay)` that torch used (coupled decay; the gradient itself otherwise).
- torch.optim.Adam and AdamW keep `state[p]["exp_avg"]` (m), `["exp_avg_sq"]` (v) and
  `["step"]`, a float32 tensor holding the steps taken (incremented before use, so t =
  step + 1; a step above 2**24 rounded as torch's own counter would hold it). An empty
  state at step 0 lets the optimizer make its own; fresh state at a later step is
  zeros with the step.
- torch.optim.Adagrad keeps `state[p]["sum"]` (the sum of squares, made at construction
  filled with `initial_accumulator_value`) and `["step"]`, a float32 tensor read only by
  `lr_decay` (the step takes lr_decay 0). Fresh state is the sum filled with the case's
  initial value.
- Hyperparameters live in every `param_groups` entry (`lr`, `momentum`, `dampening`,
  `nesterov`, `betas`, `eps`, `weight_decay`): each case's go there, as a scheduler
  sets `lr`, so one optimizer serves every case of its kind; a value the group keeps as
  a tensor (a compiled optimizer's lr) is filled in place. A group holding the bias
  alone is the bias's parameter group (`set_hyperparameters`).
- The gradients are read when `optimizer.step()` starts (a step pre-hook): SGD's
  foreach path with Nesterov adds momentum * buffer into the `.grad` tensors in place.
- Parameters are float32, or bfloat16 or float16 where the declared `precision` names
  that dtype (a model converted with `.to(torch.bfloat16)`): the case's float32 values
  are rounded into them by `copy_`, the parameter-sized state is loaded in the dtype the
  optimizer keeps it in (the parameter's, as torch.optim makes it), and bfloat16 and
  float16 values are read back widened to float32, which is exact; float32 tensors are
  read as they are, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

import torch

from .._codec import AdagradOptimizer, AdamOptimizer, Case, Float32Array, Optimizer, RejectCase
from . import _layout
from ._layout import torch_parameters, torch_state


def find_linear(model: torch.nn.Module) -> torch.nn.Linear:
    """The one nn.Linear inside `model` (the model itself, or any submodule); ValueError
    naming what was found when there is none or more than one."""
    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model_fn must return a torch.nn.Module, got {type(model).__name__}")
    found = [(name or "(the model)", m) for name, m in model.named_modules()
             if isinstance(m, torch.nn.Linear)]
    if not found:
        raise ValueError(f"the model ({type(model).__name__}) holds no torch.nn.Linear; the "
                         f"suite tests one biased Linear layer")
    if len(found) > 1:
        names = ", ".join(name for name, _ in found)
        raise ValueError(f"the model ({type(model).__name__}) holds {len(found)} "
                         f"torch.nn.Linear modules ({names}); the suite tests exactly one")
    return found[0][1]


# The torch dtypes of the names a `precision` declaration takes.
TORCH_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# Stored in these, parameters and state are read back widened to float32 (exactly).
WIDENED = (torch.bfloat16, torch.float16)


def parameter_dtypes(precision: Mapping[str, str] | None) -> tuple[torch.dtype, ...]:
    """The dtypes the Linear's parameters may be stored in: float32, and with a declared
    `precision` (the hello's, names normalised) every dtype it names."""
    names = ["float32", *(precision or {}).values()]
    return tuple(TORCH_DTYPES[n] for n in dict.fromkeys(names))


def check_linear(linear: torch.nn.Linear, d: int, k: int,
                 dtypes: Collection[torch.dtype] = (torch.float32,)) -> None:
    """ValueError naming the problem unless `linear` is a biased Linear d -> k whose
    parameters are stored in one of `dtypes` (`parameter_dtypes`)."""
    if linear.in_features != d or linear.out_features != k:
        raise ValueError(f"model_fn({d}, {k}) gave a Linear({linear.in_features}, "
                         f"{linear.out_features}); expected Linear({d}, {k})")
    if linear.bias is None:
        raise ValueError("the Linear has no bias (bias=False); the suite tests a biased layer")
    for name, p in (("weight", linear.weight), ("bias", linear.bias)):
        if p.dtype in dtypes:
            continue
        if set(dtypes) == {torch.float32}:
            raise ValueError(f"the Linear's {name} is {p.dtype}; the suite tests float32 "
                             f"parameters unless a precision is declared (e.g. "
                             f"precision={{'param_dtype': 'bfloat16', 'master_dtype': "
                             f"'bfloat16'}} for a model converted to bfloat16)")
        named = ", ".join(str(t).removeprefix("torch.") for t in dtypes)
        raise ValueError(f"the Linear's {name} is {p.dtype}; the suite tests parameters "
                         f"stored in float32 or a dtype the declared precision names "
                         f"({named})")


def state_dtype(optimizer: torch.optim.Optimizer, p: torch.Tensor, key: str) -> torch.dtype:
    """The dtype to load the parameter-sized state entry `key` of `p` in: that of the
    entry the optimizer already keeps, else the parameter's (torch.optim makes its
    state with zeros_like(p))."""
    kept = optimizer.state.get(p, {}).get(key)
    return kept.dtype if isinstance(kept, torch.Tensor) else p.dtype


def widened(t: torch.Tensor) -> torch.Tensor:
    """`t` itself when float32 (or any dtype but bfloat16 and float16); a bfloat16 or
    float16 tensor widened to float32, exactly (NumPy has no bfloat16)."""
    return t.float() if t.dtype in WIDENED else t


def hyperparameters(case: Case) -> dict[str, Any]:
    """The case's hyperparameters under torch's param_groups keys. A plain SGD case is
    SGD with momentum 0 and no weight decay: an optimizer made with momentum runs it so."""
    hp: dict[str, Any] = {"lr": float(case.lr)}
    o = case.optimizer
    if isinstance(o, AdagradOptimizer):
        hp.update(eps=float(o.eps), weight_decay=float(o.weight_decay),
                  initial_accumulator_value=float(o.initial_accumulator_value))
    elif isinstance(o, AdamOptimizer):
        hp.update(betas=(float(o.b1), float(o.b2)), eps=float(o.eps),
                  weight_decay=float(o.weight_decay))
    elif isinstance(o, Optimizer):
        hp.update(momentum=float(o.momentum), dampening=float(o.dampening),
                  nesterov=bool(o.nesterov), weight_decay=float(o.weight_decay))
    else:
        hp.update(momentum=0.0, dampening=0.0, nesterov=False, weight_decay=0.0)
    return hp


def set_hyperparameters(optimizer: torch.optim.Optimizer, case: Case,
                        bias: torch.Tensor | None = None) -> None:
    """Every param group takes the case's hyperparameters: those the group has (a key
    it lacks is one the optimizer does not read); a tensor value is filled in place.

    A group that holds the `bias` alone is the bias's parameter group: it takes the
    bias's lr (`case.bias_lr`, else the case's), and its weight decay only when the case
    gives the bias one (`case.bias_weight_decay`); otherwise it keeps the weight decay
    the user's optimizer_fn gave it, so that a step with no decay on its bias that does
    not declare the group is tested as it runs."""
    for i, group in enumerate(optimizer.param_groups):
        if "lr" not in group:
            raise ValueError(f"the optimizer's param_groups[{i}] has no 'lr'; the kit sets "
                             f"each case's hyperparameters there, as torch.optim keeps them")
        bias_only = bias is not None and len(group["params"]) == 1 and group["params"][0] is bias
        values = hyperparameters(case.for_bias() if bias_only else case)
        if bias_only and case.bias_weight_decay is None:
            values.pop("weight_decay", None)
        for key, value in values.items():
            if key not in group:
                continue
            if isinstance(group[key], torch.Tensor):
                group[key].fill_(value)
            else:
                group[key] = value


def optimizer_kind(case: Case) -> tuple[str, str | None]:
    """What selects an optimizer object for a case: its kind ("sgd", "momentum", "adam")
    and decay convention. Cases of one kind share an optimizer; their hyperparameters
    differ only in values."""
    o = case.optimizer
    if o is None:
        return ("sgd", None)
    return (o.kind, o.decay)


def linear_parameters(linear: torch.nn.Linear) -> dict[str, torch.Tensor]:
    """The Linear's parameters by torch's names."""
    assert linear.bias is not None
    return {"weight": linear.weight, "bias": linear.bias}


def load_case(linear: torch.nn.Linear, optimizer: torch.optim.Optimizer,
              case: Case) -> dict[str, Float32Array]:
    """The case's parameters into `linear` (in place: the model and its optimizer keep
    their tensors), its hyperparameters into the optimizer's groups, its state into
    the optimizer's state, replacing whatever an earlier step left there; returns the
    parameters loaded (`torch_parameters`). `.grad` is left alone: clearing it is the
    train step's job."""
    params = linear_parameters(linear)
    loaded = torch_parameters(case)
    with torch.no_grad():
        for name, values in loaded.items():
            params[name].copy_(torch.from_numpy(values))  # rounded into narrower parameters
    set_hyperparameters(optimizer, case, params["bias"])
    for name, entries in torch_state(case).items():
        p = params[name]
        optimizer.state[p] = {
            key: torch.from_numpy(v).to(p.device, state_dtype(optimizer, p, key)
                                        if v.shape == tuple(p.shape) else None)
            for key, v in entries.items()}
    return loaded


class GradientCapture:
    """The Linear's gradients as they stand when `optimizer.step()` starts (a step
    pre-hook, registered once per optimizer): `arm()` before the train step, `take()`
    after it.

    With clipping (`arm(after_backward=True)`), the gradients as backward left them
    instead: the last value a post-accumulate-grad hook saw (eager autograd fires it as it
    accumulates `.grad`; FSDP2 fires it on the sharded parameter once its reduce-scatter
    has set `.grad`). `clip_grad_norm_` then scales `.grad` in place before `step()`, and
    the step's reported gradients are the loss's (docs/spec/step.md, "Gradient
    clipping")."""

    def __init__(self, optimizer: torch.optim.Optimizer, linear: torch.nn.Linear) -> None:
        self.params = linear_parameters(linear)
        self.grads: dict[str, torch.Tensor] | None = None
        self.backward: dict[str, torch.Tensor] = {}
        self.after_backward = False
        self.calls = 0
        optimizer.register_step_pre_hook(self._hook)
        for name, p in self.params.items():
            p.register_post_accumulate_grad_hook(
                lambda param, name=name: self._accumulated(name, param))

    def _accumulated(self, name: str, param: torch.Tensor) -> None:
        if self.after_backward and param.grad is not None:
            self.backward[name] = param.grad.detach().clone()

    def _hook(self, optimizer: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        self.calls += 1
        grads = {}
        for name, p in self.params.items():
            if p.grad is None:
                raise RejectCase(f"optimizer.step() ran with no gradient on the Linear's "
                                 f"{name}: train_step must call loss.backward() first")
            if self.after_backward:
                if name not in self.backward:
                    raise RejectCase(f"the Linear's {name} got no gradient from backward in "
                                     f"this train step")
                grads[name] = self.backward[name]
            else:
                grads[name] = p.grad.detach().clone()
        self.grads = grads

    def arm(self, after_backward: bool = False) -> None:
        self.calls, self.grads, self.backward = 0, None, {}
        self.after_backward = after_backward

    def take(self) -> dict[str, torch.Tensor]:
        """The gradients of the one optimizer.step() since `arm()`; RejectCase otherwise."""
        calls, grads = self.calls, self.grads
        if calls != 1 or grads is None:
            raise RejectCase(f"train_step called optimizer.step() {calls} times; one "
                             f"training step calls it once")
        return grads


def read(t: torch.Tensor) -> Float32Array:
    """A tensor's values as a float32 array, a copy (the tensor is the model's own,
    overwritten by the next case); bfloat16 and float16 widened (`widened`)."""
    a: Float32Array = widened(t.detach().cpu()).numpy().copy()
    return a


def loss_output(loss: object) -> object:
    """What train_step returned, as the loss output: a tensor's float32 values, or the
    value itself (a Python float, checked by the kit: it must be exactly a float32)."""
    if isinstance(loss, torch.Tensor):
        return read(loss)
    return loss


def decayed_gradient(case: Case, name: str, grad: torch.Tensor,
                     before: torch.Tensor) -> torch.Tensor:
    """At momentum 0, where torch keeps no buffer, the spec's buffer: the decayed
    gradient torch's step used, `grad.add(param, alpha=weight_decay)` with the parameter
    before the step (`before`) under coupled decay, the gradient itself otherwise.
    Elementwise: a rank's part of it is made from its parts of both."""
    o = case.optimizer
    assert isinstance(o, Optimizer)
    wd = (case.for_bias() if name == "bias" else case).optimizer.weight_decay
    return grad.add(before, alpha=float(wd)) if o.decay == "coupled" else grad


def outputs(case: Case, loss: object, params: Mapping[str, torch.Tensor],
            grads: Mapping[str, torch.Tensor], state: Callable[[str], Mapping[str, Any]],
            before: Mapping[str, torch.Tensor]) -> dict[str, Any]:
    """`_layout.outputs` of whole CPU tensors by torch's names; `before`: the parameters
    before the step, which the decayed gradient is made of."""
    return _layout.outputs(
        case, loss_output(loss), params, grads, state,
        lambda name: decayed_gradient(case, name, grads[name], before[name]), read)
