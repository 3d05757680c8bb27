"""Adagrad in the kit: the hello's "adagrad" declaration, Adagrad steps parsed into
Case.optimizer and the sum of squares, strictly (a malformed or misplaced field is named),
steps outside the declared options (the epsilon's place, the decay convention) rejected,
the sum after the step required in the result, and torch.optim.Adagrad through the torch
harness."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import (F32, WORKED, adagrad_step, make_case, step_message, with_adagrad,
                       with_momentum)

SUMS = ("second_moment_kernel", "second_moment_bias")
# The worked example (g: kernel 5, bias 3; p: kernel 1, bias 0) as an Adagrad step with
# eps 1 outside the root, sums 11 and 7 before it, lr 0.1: s' = 36 and 16, the
# directions 5 / (6 + 1) and 3 / (4 + 1).
WORKED_ADAGRAD = with_adagrad(WORKED, eps=1.0)
WORKED_ADAGRAD.update(second_moment_kernel=np.array([[11]], F32),
                      second_moment_bias=np.array([7], F32))


def parse(case: dict[str, Any], **extra: Any) -> sgdc_adapter.Case:
    return sgdc_adapter.parse_case(step_message(case, 0, **extra)[0])


@pytest.mark.parametrize("adagrad, sent", [
    ({}, {"weight_decay": [], "eps_root": False}),
    ({"weight_decay": ["coupled"]}, {"weight_decay": ["coupled"], "eps_root": False}),
    (sgdc_adapter.AdagradSupport(weight_decay=("decoupled", "coupled"), eps_root=True),
     {"weight_decay": ["coupled", "decoupled"], "eps_root": True}),
])
def test_the_hello_reply_declares_adagrad(fake_suite: Any, adagrad: Any,
                                          sent: dict[str, Any]) -> None:
    hello = fake_suite(adagrad_step, adagrad=adagrad).hello()
    assert hello["adagrad"] == sent and "adam" not in hello


@pytest.mark.parametrize("adagrad, message", [
    (True, "adagrad must be an AdagradSupport or a mapping with keys weight_decay, eps_root"),
    ({"lr_decay": 0.1}, "adagrad: unknown key 'lr_decay'"),
    ({"eps_root": "yes"}, "adagrad eps_root must be True or False, got 'yes'"),
    ({"weight_decay": ["l2"]}, "adagrad weight_decay convention 'l2' is not 'coupled' or "
                               "'decoupled'"),
])
def test_invalid_adagrad_declarations(adagrad: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        sgdc_adapter.Adapter(adagrad_step, name="a", version="0", adagrad=adagrad)
    assert message in str(info.value)


def test_an_adagrad_step_is_parsed() -> None:
    case = parse(with_adagrad(make_case(3, 2, 4, step=9), eps=0.0, eps_root=1e-7,
                              initial_accumulator_value=0.1, weight_decay=0.01,
                              decay="decoupled", seed=7))
    assert case.optimizer == sgdc_adapter.AdagradOptimizer(
        kind="adagrad", eps=F32(0), eps_root=F32(1e-7), initial_accumulator_value=F32(0.1),
        weight_decay=F32(0.01), decay="decoupled")
    rng = np.random.default_rng(7)
    for key, shape in zip(SUMS, ((2, 4), (4,))):
        got = getattr(case, key)
        assert got is not None and got.flags.writeable
        assert np.array_equal(got, np.square(rng.standard_normal(shape)).astype(F32)), key
    assert case.momentum_kernel is None and not case.fresh_state
    assert "optimizer=adagrad(eps=0.0, eps_root=1e-07, initial_accumulator_value=0.1" in repr(case)
    fresh = parse(with_adagrad(WORKED, state=False))
    assert fresh.fresh_state and fresh.second_moment_kernel is None
    assert repr(fresh).endswith("decay=coupled, fresh))")


@pytest.mark.parametrize("change, message", [
    ({"initial_accumulator_value": None}, "initial_accumulator_value: missing; an Adagrad step "
                                          "carries eps, eps_root, initial_accumulator_value"),
    ({"momentum_kernel": "AACAPw=="}, "momentum_kernel: not an Adagrad step's field"),
    ({"b1": "AACAPw=="}, "b1: not an Adagrad step's field"),
    ({"second_moment_bias": None}, "second_moment_kernel without second_moment_bias"),
    ({"decay": "l2"}, "decay: expected \"coupled\" or \"decoupled\", got 'l2'"),
])
def test_malformed_adagrad_fields_are_named(change: dict[str, Any], message: str) -> None:
    msg = step_message(WORKED_ADAGRAD, 0)[0]
    for key, value in change.items():
        if value is None:
            del msg[key]
        else:
            msg[key] = value
    with pytest.raises(sgdc_adapter.RejectCase) as info:
        sgdc_adapter.parse_case(msg)
    assert message in str(info.value)


def test_adagrad_fields_elsewhere_are_rejected() -> None:
    with pytest.raises(sgdc_adapter.RejectCase, match="only an Adagrad step carries it"):
        parse(WORKED, initial_accumulator_value="AACAPw==")
    with pytest.raises(sgdc_adapter.RejectCase, match="not an Adagrad step's field|momentum"):
        parse(with_momentum(WORKED), initial_accumulator_value="AACAPw==")


@pytest.mark.parametrize("declared, options, message", [
    (None, {}, "optimizer: an Adagrad step, but this adapter declared no adagrad"),
    ({}, {"eps": 0.0, "eps_root": 1e-7},
     "eps_root: 1e-07, but this adapter declared its Adagrad epsilon outside the square root "
     "(no eps_root)"),
    ({"eps_root": True}, {"eps": 1e-10}, "eps: 1e-10 outside the square root, but this adapter "
                                         "declared its Adagrad epsilon inside (eps_root)"),
    ({}, {"weight_decay": 0.125}, "decay: weight_decay 0.125 coupled, but this adapter declared "
                                  "no weight decay"),
])
def test_adagrad_steps_outside_the_declared_options_are_rejected(
        fake_suite: Any, declared: Any, options: dict[str, Any], message: str) -> None:
    seen: list[sgdc_adapter.Case] = []

    def step(case: sgdc_adapter.Case) -> dict[str, Any]:
        seen.append(case)
        return adagrad_step(case)

    suite = fake_suite(step, adagrad=declared) if declared is not None else fake_suite(step)
    suite.hello()
    assert suite.step(with_adagrad(WORKED, **options)) == {"op": "error", "id": 1,
                                                           "message": message}
    assert not seen


def test_the_sum_after_the_step_is_returned_and_required(fake_suite: Any) -> None:
    suite = fake_suite(adagrad_step, capabilities=("grads",), adagrad={})
    suite.hello()
    out = suite.step(WORKED_ADAGRAD, 1)
    assert out["second_moment_kernel"].tolist() == [36.0]
    assert out["second_moment_bias"].tolist() == [16.0]
    assert "momentum_kernel" not in out
    assert out["kernel"].tobytes() == np.array([F32(1) - F32(0.1) * (F32(5) / F32(7))],
                                               F32).tobytes()

    def forgets(case: sgdc_adapter.Case) -> dict[str, Any]:
        out = adagrad_step(case)
        del out["second_moment_bias"]
        return out

    broken = fake_suite(forgets, adagrad={})
    broken.hello()
    answer = broken.step(WORKED_ADAGRAD, 1)
    assert answer["op"] == "error"
    assert "second_moment_bias" in answer["message"] and "Adagrad" in answer["message"]


def test_torch_adagrad_through_the_harness(fake_suite: Any) -> None:
    """torch.optim.Adagrad with the case's sum loaded into state["sum"]: the worked
    example's numbers, and a fresh sum filled with the initial value."""
    torch = pytest.importorskip("torch")
    from sgdc_adapter.torch import TorchHarness

    harness = TorchHarness(lambda d, k: torch.nn.Linear(d, k),
                           lambda params, o: torch.optim.Adagrad(params, lr=0.01))
    suite = fake_suite(harness, capabilities=("grads",), adagrad={"weight_decay": ["coupled"]})
    suite.hello()
    out = suite.step(WORKED_ADAGRAD, 1)
    assert out["second_moment_kernel"].tolist() == [36.0]
    assert out["second_moment_bias"].tolist() == [16.0]
    assert abs(float(out["kernel"][0]) - (1 - 0.1 * 5 / 7)) < 1e-6
    assert abs(float(out["bias"][0]) - (-0.1 * 3 / 5)) < 1e-6
    fresh = suite.step(with_adagrad(WORKED, eps=1.0, initial_accumulator_value=11, state=False), 2)
    assert fresh["second_moment_kernel"].tolist() == [36.0]
    assert abs(float(fresh["kernel"][0]) - (1 - 0.1 * 5 / 7)) < 1e-6
