"""A case's arrays in torch's layout, and a step's outputs back in the suite's, without
torch: NumPy arrays only (the layout facts are `_state`'s docstring). The FSDP2
harness's coordinator, which puts the ranks' parts together, imports this and not torch;
the eager harness reads its tensors into float32 arrays with `_state.read`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._codec import AdagradOptimizer, AdamOptimizer, Case, Float32Array, Optimizer

# The Linear's parameters by torch's names, with the suite's names and whether torch
# keeps them transposed.
PARAMETERS = (("weight", "kernel", True), ("bias", "bias", False))
# The torch state entries an optimizer kind keeps per parameter.
STATE_KEYS = {"momentum": ("momentum_buffer",), "adam": ("exp_avg", "exp_avg_sq", "step"),
              "adagrad": ("sum", "step")}


def torch_layout(array: Float32Array, transposed: bool) -> Float32Array:
    """A case's array in torch's layout, contiguous and writable (its own copy)."""
    return np.ascontiguousarray(array.T if transposed else array).copy()


def torch_parameters(case: Case) -> dict[str, Float32Array]:
    """The case's parameters by torch's names: {"weight": [k, d], "bias": [k]}."""
    return {name: torch_layout(getattr(case, ours), transposed)
            for name, ours, transposed in PARAMETERS}


def torch_state(case: Case) -> dict[str, dict[str, Float32Array]]:
    """The optimizer state before the step, per parameter by torch's names, as torch
    keeps it (`_state`'s docstring); an empty dict lets the optimizer make its own."""
    o = case.optimizer
    state: dict[str, dict[str, Float32Array]] = {name: {} for name, _, _ in PARAMETERS}
    if isinstance(o, Optimizer) and not case.fresh_state and o.momentum != 0:
        for name, ours, transposed in PARAMETERS:
            state[name]["momentum_buffer"] = torch_layout(getattr(case, "momentum_" + ours),
                                                          transposed)
    elif isinstance(o, AdagradOptimizer):
        for name, ours, transposed in PARAMETERS:
            p = getattr(case, ours)
            s = getattr(case, "second_moment_" + ours)
            state[name] = {
                "step": np.array(float(case.step), dtype=np.float32),
                "sum": torch_layout(np.full_like(p, o.initial_accumulator_value) if s is None
                                    else s, transposed)}
    elif isinstance(o, AdamOptimizer) and not (case.fresh_state and case.step == 0):
        for name, ours, transposed in PARAMETERS:
            p = getattr(case, ours)
            m, v = getattr(case, "momentum_" + ours), getattr(case, "second_moment_" + ours)
            state[name] = {
                # torch keeps `step` as a float32 tensor on the CPU (_get_scalar_dtype).
                "step": np.array(float(case.step), dtype=np.float32),
                "exp_avg": torch_layout(np.zeros_like(p) if m is None else m, transposed),
                "exp_avg_sq": torch_layout(np.zeros_like(p) if v is None else v, transposed)}
    return state


def keeps_no_buffer(case: Case, entries: Mapping[str, Any]) -> bool:
    """Whether a parameter's state after the step (`entries`) lacks the momentum buffer
    because torch keeps none at momentum 0: the spec's buffer is then the decayed
    gradient the step used (`_state.decayed_gradient`)."""
    o = case.optimizer
    return (isinstance(o, Optimizer) and o.momentum == 0
            and entries.get("momentum_buffer") is None)


def outputs(case: Case, loss: object, params: Mapping[str, Any], grads: Mapping[str, Any],
            state: Callable[[str], Mapping[str, Any]], decayed: Callable[[str], Any],
            read: Callable[[Any], Float32Array]) -> dict[str, Any]:
    """The step's outputs in the suite's layout, from values by torch's names, whole
    (unsharded), in torch's layout: `params` and `grads`; `state(name)`, the optimizer's
    state of that parameter after the step; `decayed(name)`, asked for only where it
    `keeps_no_buffer`. `read` makes a value a float32 array (a copy where the value is
    the model's own); `loss` is the loss output as it is."""
    out: dict[str, Any] = {"loss": loss}

    def ours(value: Any, transposed: bool) -> Float32Array:
        a = read(value)
        return a.T if transposed else a

    for name, short, transposed in PARAMETERS:
        out[short] = ours(params[name], transposed)
        out["grad_" + short] = ours(grads[name], transposed)
    o = case.optimizer
    if o is None:
        return out
    for name, short, transposed in PARAMETERS:
        entries = state(name)
        if keeps_no_buffer(case, entries):
            out["momentum_" + short] = ours(decayed(name), transposed)
            continue
        for key in STATE_KEYS[o.kind]:
            if key not in entries:
                raise ValueError(f"the optimizer keeps no {key!r} for the Linear's {name} "
                                 f"after the step; the kit reads torch's own state layout "
                                 f"({', '.join(STATE_KEYS[o.kind])})")
        if isinstance(o, AdagradOptimizer):
            out["second_moment_" + short] = ours(entries["sum"], transposed)
        elif isinstance(o, AdamOptimizer):
            out["momentum_" + short] = ours(entries["exp_avg"], transposed)
            out["second_moment_" + short] = ours(entries["exp_avg_sq"], transposed)
        else:
            out["momentum_" + short] = ours(entries["momentum_buffer"], transposed)
    return out
