"""Parameter groups in the kit: the step message's bias_lr and bias_weight_decay, and end
to end (with the suite's CLI) a production step with no weight decay on its bias:
conformant with the group declared, rejected undeclared, and rejected under the nearest
wrong declaration."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import F32, adam_step, enc, make_case, step_message, with_momentum

CASES = 30
MOMENTUM = {"nesterov": True, "dampening": True, "weight_decay": ["coupled", "decoupled"]}
ADAM = {"weight_decay": ["coupled", "decoupled"], "eps_root": True}
NO_DECAY_ON_BIAS = {"bias_group": {"weight_decay": 0}}


def grouped_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """A correct step with parameter groups: the bias stepped as the case its group
    sees (torch.optim with one param group per parameter)."""
    out = adam_step(case)
    bias = adam_step(case.for_bias())
    for key in ("bias", "grad_bias", "momentum_bias", "second_moment_bias"):
        if key in bias:
            out[key] = bias[key]
    return out


def no_decay_on_bias_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """The production step: its optimizer was built with the bias in a group of weight
    decay 0, whatever the case says."""
    if case.optimizer is not None:
        case = dataclasses.replace(case, bias_weight_decay=F32(0))
    return grouped_step(case)


def test_the_step_message_carries_the_bias_group() -> None:
    msg = step_message(with_momentum(make_case(2, 1, 1), weight_decay=0.1), 0)[0]
    case = sgdc_adapter.parse_case({**msg, "bias_lr": enc([0.25]),
                                    "bias_weight_decay": enc([0.0])})
    assert case.bias_lr == F32(0.25) and case.bias_weight_decay == F32(0)
    bias = case.for_bias()
    assert bias.lr == F32(0.25) and bias.optimizer.weight_decay == F32(0)
    assert bias.bias_lr is None and bias.bias_weight_decay is None
    assert case.optimizer.weight_decay == F32(0.1), "the kernel keeps its own"
    assert "bias_group(lr=0.25, weight_decay=0.0)" in repr(case)
    plain = sgdc_adapter.parse_case(step_message(make_case(2, 1, 1), 0)[0])
    assert plain.bias_lr is None and plain.for_bias().lr == plain.lr


def test_bias_weight_decay_in_a_plain_sgd_step_is_rejected() -> None:
    msg = step_message(make_case(2, 1, 1), 0)[0]
    with pytest.raises(sgdc_adapter.RejectCase, match="bias_weight_decay in a plain SGD step"):
        sgdc_adapter.parse_case({**msg, "bias_weight_decay": enc([0.0])})
    with pytest.raises(sgdc_adapter.RejectCase, match="bias_lr"):
        sgdc_adapter.parse_case({**msg, "bias_lr": enc(np.zeros(2, np.float32))})


def test_the_hello_declares_the_group(fake_suite: Any) -> None:
    hello = fake_suite(grouped_step, momentum=MOMENTUM, recipe=NO_DECAY_ON_BIAS).hello()
    assert hello["recipe"] == {"bias_group": {"weight_decay": 0.0}}


def check(sgdc: Any, step: Any, **declarations: Any) -> Any:
    return sgdc.check(step, name="param-groups", capabilities=("grads", "step_counter"),
                      momentum=MOMENTUM, adam=ADAM, cases=CASES, **declarations)


def test_no_decay_on_bias_conforms_as_declared(sgdc: Any) -> None:
    result = check(sgdc, no_decay_on_bias_step, recipe=NO_DECAY_ON_BIAS)
    assert result.verdict == "conformant", result.text
    assert result.report["implementation"]["recipe"] == {"bias_group": {"weight_decay": 0}}


def test_undeclared_no_decay_on_bias_is_rejected(sgdc: Any) -> None:
    with pytest.raises(pytest.fail.Exception, match="stepped without weight decay"):
        check(sgdc, no_decay_on_bias_step)


def test_the_nearest_wrong_declaration_is_rejected(sgdc: Any) -> None:
    with pytest.raises(pytest.fail.Exception, match="NOT CONFORMANT"):
        check(sgdc, no_decay_on_bias_step, recipe={"bias_group": {"weight_decay": [0, 0.1]}})


def test_a_step_that_reads_the_group_conforms_over_ranges(sgdc: Any) -> None:
    recipe = {"bias_group": {"lr": [1e-3, 1.0], "weight_decay": [0, 0.1]}}
    result = check(sgdc, grouped_step, recipe=recipe)
    assert result.verdict == "conformant", result.text
    with pytest.raises(pytest.fail.Exception, match="parameter group is not applied"):
        check(sgdc, adam_step, recipe=recipe)


def test_the_step_message_carries_the_clipping() -> None:
    msg = step_message(make_case(2, 1, 1), 0)[0]
    case = sgdc_adapter.parse_case({**msg, "clip_max_norm": enc([1.0]), "clip_eps": enc([0.0])})
    assert case.clip_max_norm == F32(1) and case.clip_eps == F32(0)
    assert "clip(max_norm=1.0, eps=0.0)" in repr(case)
    assert sgdc_adapter.parse_case(msg).clip_max_norm is None


@pytest.mark.parametrize("fields, message", [
    ({"clip_max_norm": [1.0]}, "a clipped step carries both"),
    ({"clip_eps": [0.0]}, "a clipped step carries both"),
    ({"clip_max_norm": [0.0], "clip_eps": [0.0]}, "clip_max_norm: must be finite and > 0"),
    ({"clip_max_norm": [1.0], "clip_eps": [-1.0]}, "clip_eps: must be finite and >= 0"),
    ({"clip_max_norm": [1.0, 2.0], "clip_eps": [0.0]}, "clip_max_norm")])
def test_bad_clipping_fields_are_named(fields: dict[str, list[float]], message: str) -> None:
    msg = step_message(make_case(2, 1, 1), 0)[0]
    with pytest.raises(sgdc_adapter.RejectCase, match=message):
        sgdc_adapter.parse_case({**msg, **{k: enc(v) for k, v in fields.items()}})
