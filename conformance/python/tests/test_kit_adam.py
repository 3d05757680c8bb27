"""Adam in the kit: the hello's "adam" declaration, Adam steps parsed into Case.optimizer
and the two moments, strictly (a malformed or misplaced field is named), steps outside
the declared options rejected, and both moments after the step required in the result."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import (ALL_ADAM, ALL_MOMENTUM, ARRAYS, BUFFERS, F32, SECOND_MOMENTS, WORKED,
                       adam_step, enc, make_case, momentum_step, step_message,
                       with_adam, with_momentum)

# The worked example as an Adam step (g: kernel 5, bias 3; p: kernel 1, bias 0), step 0
# (t = 1: the bias corrections are 1 - b1 = 0.5 and 1 - b2 = 0.25): b1 0.5, b2 0.75,
# eps 4, weight decay 0.25 decoupled, lr 0.1; m 1 and 1, v 13 and 1.
# Kernel: m' = 0.5 + 2.5 = 3, v' = 9.75 + 6.25 = 16, mh = 6, vh = 64, a = 6 / (8 + 4) = 0.5,
# p' = 1 - 0.1*(0.5 + 0.25*1). Bias: m' = 0.5 + 1.5 = 2, v' = 0.75 + 2.25 = 3,
# a = 4 / (sqrt(12) + 4), p' = -0.1*a.
WORKED_ADAM = with_adam(WORKED, b1=0.5, b2=0.75, eps=4, weight_decay=0.25, decay="decoupled")
WORKED_ADAM.update(momentum_kernel=np.array([[1]], F32), momentum_bias=np.array([1], F32),
                   second_moment_kernel=np.array([[13]], F32),
                   second_moment_bias=np.array([1], F32))
STATE = BUFFERS + SECOND_MOMENTS


def parse(case: dict[str, Any], **extra: Any) -> sgdc_adapter.Case:
    return sgdc_adapter.parse_case(step_message(case, 0, **extra)[0])


def recording(seen: list[sgdc_adapter.Case]) -> Any:
    def step(case: sgdc_adapter.Case) -> dict[str, Any]:
        seen.append(case)
        return adam_step(case)
    return step


# --- the declaration ------------------------------------------------------------------

@pytest.mark.parametrize("adam, sent", [
    (ALL_ADAM, ALL_ADAM),
    ({}, {"weight_decay": [], "eps_root": False}),
    ({"weight_decay": ("decoupled", "coupled")},
     {"weight_decay": ["coupled", "decoupled"], "eps_root": False}),
    ({"eps_root": True}, {"weight_decay": [], "eps_root": True}),
    (sgdc_adapter.AdamSupport(weight_decay=("decoupled",)),
     {"weight_decay": ["decoupled"], "eps_root": False}),
    (sgdc_adapter.AdamSupport(), {"weight_decay": [], "eps_root": False}),
])
def test_the_hello_reply_declares_adam(fake_suite: Any, adam: Any, sent: dict[str, Any]) -> None:
    assert fake_suite(adam_step, adam=adam).hello()["adam"] == sent


def test_no_adam_declared_no_adam_sent(fake_suite: Any) -> None:
    hello = fake_suite(momentum_step, momentum=ALL_MOMENTUM).hello()
    assert "adam" not in hello and "momentum" in hello


def test_adam_and_momentum_together(fake_suite: Any) -> None:
    hello = fake_suite(adam_step, momentum={}, adam={"eps_root": True}).hello()
    assert hello["momentum"] == {"dampening": False, "nesterov": False, "weight_decay": []}
    assert hello["adam"] == {"weight_decay": [], "eps_root": True}


def test_adam_declaration_normalises() -> None:
    assert sgdc_adapter.adam_declaration({"weight_decay": ["decoupled", "coupled"]}) == \
        sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"), eps_root=False)


@pytest.mark.parametrize("adam, message", [
    (True, "adam must be an AdamSupport or a mapping with keys weight_decay, eps_root; got True"),
    ({"eps_root": True, "amsgrad": True}, "adam: unknown key 'amsgrad'; the keys are "
                                          "weight_decay, eps_root"),
    ({"dampening": True}, "adam: unknown key 'dampening'"),
    ({"eps_root": 1}, "adam eps_root must be True or False, got 1"),
    (sgdc_adapter.AdamSupport(eps_root=None), "adam eps_root must be True or False, got None"),  # type: ignore[arg-type]
    ({"weight_decay": "decoupled"}, "adam weight_decay must be a collection of conventions, "
                                    "e.g. ('coupled', 'decoupled'); got 'decoupled'"),
    ({"weight_decay": ["adamw"]}, "adam weight_decay convention 'adamw' is not 'coupled' or "
                                  "'decoupled'"),
    ({"weight_decay": ["decoupled", "decoupled"]}, "adam weight_decay lists 'decoupled' twice"),
])
def test_invalid_adam_declarations(adam: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        sgdc_adapter.Adapter(adam_step, name="a", version="0", adam=adam)
    assert message in str(info.value)


# --- parsing --------------------------------------------------------------------------

def test_an_adam_step_is_parsed() -> None:
    case = parse(with_adam(make_case(3, 2, 4, step=9), b1=0.75, b2=0.875, eps=1e-3,
                           eps_root=1e-6, weight_decay=0.01, decay="decoupled", seed=7))
    assert case.optimizer == sgdc_adapter.AdamOptimizer(
        kind="adam", b1=F32(0.75), b2=F32(0.875), eps=F32(1e-3), eps_root=F32(1e-6),
        weight_decay=F32(0.01), decay="decoupled")
    o = case.optimizer
    assert isinstance(o, sgdc_adapter.AdamOptimizer)
    for value in (o.b1, o.b2, o.eps, o.eps_root, o.weight_decay):
        assert type(value) is np.float32
    rng = np.random.default_rng(7)
    want = {"momentum_kernel": rng.standard_normal((2, 4)), "momentum_bias": rng.standard_normal(4),
            "second_moment_kernel": np.square(rng.standard_normal((2, 4))),
            "second_moment_bias": np.square(rng.standard_normal(4))}
    for key, value in want.items():
        got = getattr(case, key)
        assert got is not None and got.shape == value.shape and got.flags.writeable, key
        assert np.array_equal(got, value.astype(F32)), key
    assert not case.fresh_state and case.step == 9
    assert repr(case) == ("Case(n=3, d=2, k=4, num_shards=1, step=9, optimizer=adam(b1=0.75, "
                          "b2=0.875, eps=0.001, eps_root=1e-06, weight_decay=0.01, "
                          "decay=decoupled))")


def test_a_first_adam_step_has_no_moments() -> None:
    case = parse(with_adam(WORKED, state=False))
    assert isinstance(case.optimizer, sgdc_adapter.AdamOptimizer)
    assert case.optimizer.decay == "coupled" and case.fresh_state
    assert all(getattr(case, key) is None for key in STATE)
    assert repr(case).endswith("decay=coupled, fresh))")


def test_binary_moments_are_references_into_the_payload() -> None:
    case = with_adam(make_case(2, 3, 2), seed=3)
    msg, payload = step_message(case, 0, binary=True)
    parsed = sgdc_adapter.parse_case(msg, bytearray(payload))
    for key in STATE:
        assert np.array_equal(getattr(parsed, key), case[key]), key
    assert isinstance(parsed.optimizer, sgdc_adapter.AdamOptimizer)
    assert parsed.optimizer.b2 == F32(0.999)


@pytest.mark.parametrize("change, message", [
    ({"b1": None}, "b1: missing; an Adam step carries b1, b2, eps, eps_root, weight_decay and "
                   "decay"),
    ({"eps_root": None}, "eps_root: missing"),
    ({"weight_decay": None}, "weight_decay: missing"),
    ({"decay": None}, "decay: missing"),
    ({"decay": "adamw"}, "decay: expected \"coupled\" or \"decoupled\", got 'adamw'"),
    ({"b2": enc([0.9, 0.9])}, "b2: expected 1 float32 values, got 8 bytes"),
    ({"eps": 1e-8}, "eps: expected a base64 string"),
    ({"eps_root": "!!"}, "eps_root: bad base64"),
    ({"momentum": enc([0.9])}, "momentum: a momentum step's field, in an Adam step"),
    ({"dampening": enc([0])}, "dampening: a momentum step's field, in an Adam step"),
    ({"nesterov": False}, "nesterov: a momentum step's field, in an Adam step"),
    ({"momentum_kernel": None}, "momentum_kernel: missing, but momentum_bias, "
                                "second_moment_kernel, second_moment_bias are sent: the moments "
                                "before the step have all of momentum_kernel, momentum_bias, "
                                "second_moment_kernel, second_moment_bias (none in fresh state)"),
    ({"second_moment_bias": None}, "second_moment_bias: missing, but momentum_kernel, "
                                   "momentum_bias, second_moment_kernel are sent"),
    ({"momentum_kernel": None, "momentum_bias": None}, "momentum_kernel: missing, but "
                                                       "second_moment_kernel, second_moment_bias "
                                                       "are sent"),
    ({"second_moment_kernel": enc([1, 2, 3])}, "second_moment_kernel: expected 2 float32 values, "
                                               "got 12 bytes"),
    ({"momentum_bias": enc([])}, "momentum_bias: expected 1 float32 values, got 0 bytes"),
])
def test_malformed_adam_fields_are_named(change: dict[str, Any], message: str) -> None:
    msg, _ = step_message(with_adam(make_case(2, 2, 1)), 0)
    for key, value in change.items():
        if value is None:
            del msg[key]
        else:
            msg[key] = value
    with pytest.raises(sgdc_adapter.RejectCase) as info:
        sgdc_adapter.parse_case(msg)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("key", ["momentum_kernel", "second_moment_kernel", "second_moment_bias"])
def test_one_moment_field_alone_is_named(key: str) -> None:
    msg, _ = step_message(with_adam(make_case(2, 2, 1), state=False), 0)
    full, _ = step_message(with_adam(make_case(2, 2, 1)), 0)
    with pytest.raises(sgdc_adapter.RejectCase) as info:
        sgdc_adapter.parse_case({**msg, key: full[key]})
    absent = next(k for k in STATE if k != key)
    assert str(info.value).startswith(f"{absent}: missing, but {key} is sent: ")


@pytest.mark.parametrize("key", ["b1", "eps_root", "second_moment_kernel", "second_moment_bias"])
def test_adam_fields_without_the_optimizer_are_rejected(key: str) -> None:
    msg, _ = step_message(with_adam(WORKED), 0)
    plain, _ = step_message(WORKED, 0)
    with pytest.raises(sgdc_adapter.RejectCase) as info:
        sgdc_adapter.parse_case({**plain, key: msg[key]})
    assert str(info.value) == (f"{key} without \"optimizer\": \"adam\": only an Adam step "
                               f"carries it")


def test_malformed_fields_answer_the_case_and_the_stream_stays_in_step(fake_suite: Any) -> None:
    suite = fake_suite(adam_step, adam=ALL_ADAM)
    suite.hello(binary=True)
    msg, payload = step_message(WORKED_ADAM, 4, binary=True)
    suite.send({**msg, "decay": "sideways"}, payload)
    assert suite.recv() == {"op": "error", "id": 4, "message":
                            "decay: expected \"coupled\" or \"decoupled\", got 'sideways'"}
    suite.send({**msg, "second_moment_bias": {"offset": len(payload), "count": 1}}, payload)
    assert suite.recv()["message"] == (f"second_moment_bias: bytes {len(payload)} to "
                                       f"{len(payload) + 4} lie outside the {len(payload)}-byte "
                                       f"payload")
    assert suite.step(WORKED_ADAM, 5)["op"] == "result"


# --- the declared options -------------------------------------------------------------

@pytest.mark.parametrize("declared, options, message", [
    (None, {}, "optimizer: an Adam step, but this adapter declared no adam"),
    ({}, {"eps_root": 1e-8}, "eps_root: 1e-08, but this adapter declared no eps_root"),
    ({"weight_decay": ["coupled", "decoupled"]}, {"eps_root": 0.5},
     "eps_root: 0.5, but this adapter declared no eps_root"),
    ({}, {"weight_decay": 0.125}, "decay: weight_decay 0.125 coupled, but this adapter declared "
                                  "no weight decay"),
    ({"weight_decay": ["coupled"], "eps_root": True}, {"weight_decay": 0.125, "decay": "decoupled"},
     "decay: weight_decay 0.125 decoupled, but this adapter declared only coupled"),
    ({"weight_decay": ["decoupled"]}, {"weight_decay": 0.5},
     "decay: weight_decay 0.5 coupled, but this adapter declared only decoupled"),
])
def test_adam_steps_outside_the_declared_options_are_rejected(fake_suite: Any, declared: Any,
                                                              options: dict[str, Any],
                                                              message: str) -> None:
    seen: list[sgdc_adapter.Case] = []
    suite = fake_suite(recording(seen), momentum=ALL_MOMENTUM, adam=declared)
    suite.hello()
    assert suite.step(with_adam(WORKED, **options)) == {"op": "error", "id": 1,
                                                        "message": message}
    assert not seen  # the step function never saw it


def test_a_momentum_step_needs_momentum_declared_even_with_adam(fake_suite: Any) -> None:
    seen: list[sgdc_adapter.Case] = []
    suite = fake_suite(recording(seen), adam=ALL_ADAM)
    suite.hello()
    assert suite.step(with_momentum(WORKED))["message"] == (
        "optimizer: a momentum step, but this adapter declared no momentum")
    assert not seen


@pytest.mark.parametrize("options", [{"eps_root": 0.0}, {"eps_root": -0.0},
                                     {"weight_decay": 0.0, "decay": "decoupled"},
                                     {"weight_decay": -0.0}])
def test_adam_options_left_at_zero_need_no_declaration(fake_suite: Any,
                                                       options: dict[str, Any]) -> None:
    suite = fake_suite(adam_step, adam={})
    suite.hello()
    assert suite.step(with_adam(WORKED, **options))["op"] == "result"


def test_check_declared_directly() -> None:
    case = parse(with_adam(WORKED, eps_root=0.25))
    sgdc_adapter.check_declared(case, None, sgdc_adapter.AdamSupport(eps_root=True))
    with pytest.raises(sgdc_adapter.RejectCase, match="^eps_root: 0.25, but"):
        sgdc_adapter.check_declared(case, None, sgdc_adapter.AdamSupport())
    with pytest.raises(sgdc_adapter.RejectCase, match="declared no adam$"):
        sgdc_adapter.check_declared(case, sgdc_adapter.MomentumSupport())


# --- results --------------------------------------------------------------------------

@pytest.mark.parametrize("binary", [False, True], ids=["base64", "binary"])
def test_the_moments_after_the_step_are_returned(fake_suite: Any, binary: bool) -> None:
    suite = fake_suite(adam_step, capabilities=("grads", "step_counter"), adam=ALL_ADAM)
    suite.hello(binary)
    out = suite.step(WORKED_ADAM, 3)
    assert out["op"] == "result" and out["step"] == 1
    assert out["grad_kernel"].tolist() == [5.0] and out["grad_bias"].tolist() == [3.0]
    assert out["momentum_kernel"].tolist() == [3.0] and out["momentum_bias"].tolist() == [2.0]
    assert out["second_moment_kernel"].tolist() == [16.0]
    assert out["second_moment_bias"].tolist() == [3.0]
    assert out["kernel"].tobytes() == np.array([1 - F32(0.1) * F32(0.75)], F32).tobytes()
    a = F32(4) / (np.sqrt(F32(12)) + F32(4))
    assert out["bias"].tobytes() == np.array([F32(0) - F32(0.1) * a], F32).tobytes()
    assert abs(float(out["bias"][0]) + 0.1 * 4 / (12**0.5 + 4)) < 1e-7


def test_a_first_adam_step_from_zeros(fake_suite: Any) -> None:
    """Fresh state: the moments are zeros, so m' = (1 - b1) g and v' = (1 - b2) g**2, and
    with t = 1 the direction is g / (|g| + eps): here 5/8 and 3/6."""
    suite = fake_suite(adam_step, adam=ALL_ADAM)
    suite.hello()
    out = suite.step(with_adam(WORKED, b1=0.5, b2=0.75, eps=3, state=False))
    assert out["momentum_kernel"].tolist() == [2.5] and out["momentum_bias"].tolist() == [1.5]
    assert out["second_moment_kernel"].tolist() == [6.25]
    assert out["second_moment_bias"].tolist() == [2.25]
    assert out["kernel"].tobytes() == np.array([1 - F32(0.1) * F32(0.625)], F32).tobytes()
    assert out["bias"].tobytes() == np.array([-(F32(0.1) * F32(0.5))], F32).tobytes()


def test_a_plain_or_momentum_step_sends_no_second_moment(fake_suite: Any) -> None:
    def step(case: sgdc_adapter.Case) -> dict[str, Any]:
        return {**momentum_step(case), "second_moment_kernel": np.zeros((1, 1), F32),
                "second_moment_bias": np.zeros(1, F32)}

    suite = fake_suite(step, momentum=ALL_MOMENTUM, adam=ALL_ADAM)
    suite.hello()
    plain, momentum = suite.step(WORKED, 1), suite.step(with_momentum(WORKED), 2)
    assert plain["op"] == momentum["op"] == "result"
    assert not any(key in plain for key in STATE)
    assert "momentum_kernel" in momentum and not any(key in momentum for key in SECOND_MOMENTS)


@pytest.mark.parametrize("drop, change, message", [
    ("momentum_kernel", {}, "internal error: TypeError: step() result lacks 'momentum_kernel', "
                            "which an Adam step returns (the first moment after the step)"),
    ("momentum_bias", {}, "internal error: TypeError: step() result lacks 'momentum_bias', which "
                          "an Adam step returns (the first moment after the step)"),
    ("second_moment_kernel", {}, "internal error: TypeError: step() result lacks "
                                 "'second_moment_kernel', which an Adam step returns (the second "
                                 "moment after the step)"),
    ("second_moment_bias", {}, "internal error: TypeError: step() result lacks "
                               "'second_moment_bias', which an Adam step returns (the second "
                               "moment after the step)"),
    ("", {"second_moment_kernel": np.zeros(3, F32)},
     "internal error: TypeError: step() result 'second_moment_kernel' has shape (3,), expected "
     "(2, 1)"),
    ("", {"second_moment_bias": np.zeros(1, np.float64)},
     "internal error: TypeError: expected float32 values, got float64"),
])
def test_the_moments_are_required_and_checked(fake_suite: Any, drop: str, change: dict[str, Any],
                                              message: str) -> None:
    def step(case: sgdc_adapter.Case) -> dict[str, Any]:
        out = {**adam_step(case), **change}
        out.pop(drop, None)
        return out

    suite = fake_suite(step, adam=ALL_ADAM)
    suite.hello()
    assert suite.step(with_adam(make_case(3, 2, 1)))["message"] == message


def test_adam_steps_in_batches(fake_suite: Any) -> None:
    cases = [make_case(4, 3, 2, step=s * 7, seed=s) for s in range(8)]
    cases = [with_adam(c, eps_root=1e-6, seed=s) if s % 4 == 0 else
             with_adam(c, state=False, weight_decay=0.01, decay="decoupled") if s % 4 == 1
             else with_momentum(c, nesterov=True, seed=s) if s % 4 == 2
             else c for s, c in enumerate(cases)]
    one = fake_suite(adam_step, momentum=ALL_MOMENTUM, adam=ALL_ADAM)
    one.hello()
    expected = [one.step(c, i) for i, c in enumerate(cases)]
    batched = fake_suite(step_batch=lambda cs: [adam_step(c) for c in cs], max_batch=8,
                         momentum=ALL_MOMENTUM, adam=ALL_ADAM)
    batched.hello(binary=True)
    for i, c in enumerate(cases):
        batched.send_case(c, i, batch_index=i, batch_size=8)
    for i, want in enumerate(expected):
        got = batched.recv()
        assert got["id"] == i and got["op"] == "result"
        keys = [key for key in ARRAYS + STATE if key in want]
        assert keys == [key for key in ARRAYS + STATE if key in got]
        assert all(got[key].tobytes() == want[key].tobytes() for key in keys)
    assert all(key in expected[0] for key in STATE) and all(key in expected[1] for key in STATE)
    assert "second_moment_kernel" not in expected[2] and "momentum_kernel" in expected[2]
    assert not any(key in expected[3] for key in STATE)

