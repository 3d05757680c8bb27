"""SGD with momentum in the kit: the hello's "momentum" declaration, momentum steps
parsed into Case.optimizer and the buffer, strictly (a malformed field is named), steps
outside the declared options rejected, and the buffer after the step required in the
result."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import (ALL_MOMENTUM, ARRAYS, BUFFERS, F32, WORKED, enc, make_case,
                       momentum_step, numpy_step, step_message, with_momentum)

# The worked example as a momentum step (g: kernel 5, bias 3; p: kernel 1, bias 0):
# buffer 0.5 and 1, momentum 0.5, dampening 0.5, weight decay 0.25 coupled, lr 0.1.
# ge = g + 0.25 p = 5.25, 3; buffer' = 0.5*buffer + 0.5*ge = 2.875, 2;
# p' = p - 0.1*buffer' = 0.7125, -0.2.
WORKED_MOMENTUM = with_momentum(WORKED, momentum=0.5, dampening=0.5, weight_decay=0.25)
WORKED_MOMENTUM.update(momentum_kernel=np.array([[0.5]], F32), momentum_bias=np.array([1], F32))


def parse(case: dict[str, Any], **extra: Any) -> sgdc_adapter.Case:
    return sgdc_adapter.parse_case(step_message(case, 0, **extra)[0])


# --- the declaration ------------------------------------------------------------------

@pytest.mark.parametrize("momentum, sent", [
    (ALL_MOMENTUM, ALL_MOMENTUM),
    ({}, {"dampening": False, "nesterov": False, "weight_decay": []}),
    ({"weight_decay": ("decoupled", "coupled")},
     {"dampening": False, "nesterov": False, "weight_decay": ["coupled", "decoupled"]}),
    (sgdc_adapter.MomentumSupport(nesterov=True, weight_decay=("decoupled",)),
     {"dampening": False, "nesterov": True, "weight_decay": ["decoupled"]}),
    (sgdc_adapter.MomentumSupport(), {"dampening": False, "nesterov": False, "weight_decay": []}),
])
def test_the_hello_reply_declares_momentum(fake_suite: Any, momentum: Any,
                                           sent: dict[str, Any]) -> None:
    assert fake_suite(numpy_step, momentum=momentum).hello()["momentum"] == sent


def test_no_momentum_declared_no_momentum_sent(fake_suite: Any) -> None:
    assert "momentum" not in fake_suite(numpy_step).hello()


@pytest.mark.parametrize("momentum, message", [
    (True, "momentum must be a MomentumSupport or a mapping with keys dampening, nesterov, "
           "weight_decay; got True"),
    ({"nesterov": True, "lookahead": True}, "momentum: unknown key 'lookahead'"),
    ({"dampening": 1}, "momentum dampening must be True or False, got 1"),
    ({"nesterov": "yes"}, "momentum nesterov must be True or False, got 'yes'"),
    (sgdc_adapter.MomentumSupport(nesterov=None), "momentum nesterov must be True or False, got None"),  # type: ignore[arg-type]
    ({"weight_decay": "coupled"}, "momentum weight_decay must be a collection of conventions, "
                                  "e.g. ('coupled', 'decoupled'); got 'coupled'"),
    ({"weight_decay": 1}, "momentum weight_decay must be a collection"),
    ({"weight_decay": ["adamw"]}, "momentum weight_decay convention 'adamw' is not 'coupled' or "
                                  "'decoupled'"),
    ({"weight_decay": ["coupled", "coupled"]}, "momentum weight_decay lists 'coupled' twice"),
])
def test_invalid_momentum_declarations(momentum: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        sgdc_adapter.Adapter(numpy_step, name="a", version="0", momentum=momentum)
    assert message in str(info.value)


# --- parsing --------------------------------------------------------------------------

def test_a_plain_step_has_no_optimizer() -> None:
    case = parse(WORKED)
    assert case.optimizer is None and case.momentum_kernel is None and case.momentum_bias is None
    assert case.fresh_state


def test_a_momentum_step_is_parsed() -> None:
    case = parse(with_momentum(make_case(3, 2, 4), momentum=0.75, dampening=0.5, nesterov=True,
                               weight_decay=0.01, decay="decoupled", seed=7))
    assert case.optimizer == sgdc_adapter.Optimizer(
        kind="momentum", momentum=F32(0.75), dampening=F32(0.5), nesterov=True,
        weight_decay=F32(0.01), decay="decoupled")
    for value in (case.optimizer.momentum, case.optimizer.dampening, case.optimizer.weight_decay):
        assert type(value) is np.float32
    rng = np.random.default_rng(7)
    assert case.momentum_kernel is not None and case.momentum_bias is not None
    assert case.momentum_kernel.shape == (2, 4) and case.momentum_bias.shape == (4,)
    assert np.array_equal(case.momentum_kernel, rng.standard_normal((2, 4)).astype(F32))
    assert np.array_equal(case.momentum_bias, rng.standard_normal(4).astype(F32))
    assert case.momentum_kernel.flags.writeable and not case.fresh_state
    assert repr(case) == ("Case(n=3, d=2, k=4, num_shards=1, step=0, optimizer=momentum("
                          "momentum=0.75, dampening=0.5, nesterov=True, weight_decay=0.01, "
                          "decay=decoupled))")


def test_a_first_step_has_no_buffer() -> None:
    case = parse(with_momentum(WORKED, buffer=False))
    assert case.optimizer is not None and case.optimizer.decay == "coupled"
    assert case.momentum_kernel is None and case.momentum_bias is None and case.fresh_state
    assert repr(case).endswith("decay=coupled, fresh))")


def test_binary_buffers_are_references_into_the_payload() -> None:
    case = with_momentum(make_case(2, 3, 2), seed=3)
    msg, payload = step_message(case, 0, binary=True)
    parsed = sgdc_adapter.parse_case(msg, bytearray(payload))
    assert parsed.momentum_kernel is not None
    assert np.array_equal(parsed.momentum_kernel, case["momentum_kernel"])
    assert parsed.optimizer is not None and parsed.optimizer.momentum == F32(0.9)


def test_plain_sgd_may_be_named() -> None:
    assert parse(WORKED, optimizer="sgd").optimizer is None


@pytest.mark.parametrize("change, message", [
    ({"optimizer": "lamb"}, "optimizer: expected \"momentum\", \"adam\" or \"adagrad\" (or \"sgd\"), got "
                            "'lamb'"),
    ({"optimizer": None}, "optimizer: expected \"momentum\", \"adam\" or \"adagrad\" (or \"sgd\"), got None"),
    ({"b1": enc([0.9])}, "b1: an Adam step's field, in a momentum step"),
    ({"second_moment_bias": enc([1])}, "second_moment_bias: an Adam step's field, in a momentum "
                                       "step"),
    ({"dampening": None}, "dampening: missing; a momentum step carries momentum, dampening, "
                          "nesterov, weight_decay and decay"),
    ({"decay": None}, "decay: missing"),
    ({"nesterov": 1}, "nesterov: expected true or false, got 1"),
    ({"nesterov": "false"}, "nesterov: expected true or false, got 'false'"),
    ({"decay": "both"}, "decay: expected \"coupled\" or \"decoupled\", got 'both'"),
    ({"momentum": enc([0.9, 0.9])}, "momentum: expected 1 float32 values, got 8 bytes"),
    ({"weight_decay": 0.1}, "weight_decay: expected a base64 string"),
    ({"dampening": "!!"}, "dampening: bad base64"),
    ({"momentum_kernel": None}, "momentum_bias without momentum_kernel: the buffer before the "
                                "step has both (neither on the optimizer's first step)"),
    ({"momentum_bias": None}, "momentum_kernel without momentum_bias"),
    ({"momentum_kernel": enc([1, 2, 3])}, "momentum_kernel: expected 2 float32 values, got 12 bytes"),
    ({"momentum_bias": enc([])}, "momentum_bias: expected 1 float32 values, got 0 bytes"),
])
def test_malformed_momentum_fields_are_named(change: dict[str, Any], message: str) -> None:
    msg, _ = step_message(with_momentum(make_case(2, 2, 1)), 0)
    for key, value in change.items():
        if value is None and key != "optimizer":
            del msg[key]
        else:
            msg[key] = value
    with pytest.raises(sgdc_adapter.RejectCase) as info:
        sgdc_adapter.parse_case(msg)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("key", ["momentum", "nesterov", "decay", "momentum_kernel"])
def test_momentum_fields_without_the_optimizer_are_rejected(key: str) -> None:
    msg, _ = step_message(with_momentum(WORKED), 0)
    plain, _ = step_message(WORKED, 0)
    with pytest.raises(sgdc_adapter.RejectCase) as info:
        sgdc_adapter.parse_case({**plain, key: msg[key]})
    assert str(info.value) == (f"{key} without \"optimizer\": \"momentum\": only a momentum step "
                               f"carries it")


def test_malformed_fields_answer_the_case_and_the_stream_stays_in_step(fake_suite: Any) -> None:
    suite = fake_suite(momentum_step, momentum=ALL_MOMENTUM)
    suite.hello(binary=True)
    msg, payload = step_message(WORKED_MOMENTUM, 4, binary=True)
    suite.send({**msg, "decay": "sideways"}, payload)
    assert suite.recv() == {"op": "error", "id": 4, "message":
                            "decay: expected \"coupled\" or \"decoupled\", got 'sideways'"}
    suite.send({**msg, "momentum_bias": {"offset": len(payload), "count": 1}}, payload)
    assert suite.recv()["message"] == (f"momentum_bias: bytes {len(payload)} to {len(payload) + 4} "
                                       f"lie outside the {len(payload)}-byte payload")
    assert suite.step(WORKED_MOMENTUM, 5)["op"] == "result"


# --- the declared options -------------------------------------------------------------

@pytest.mark.parametrize("declared, options, message", [
    (None, {}, "optimizer: a momentum step, but this adapter declared no momentum"),
    ({}, {"dampening": 0.5}, "dampening: 0.5, but this adapter declared no dampening"),
    ({}, {"nesterov": True}, "nesterov: true, but this adapter declared no Nesterov momentum"),
    ({}, {"weight_decay": 0.125}, "decay: weight_decay 0.125 coupled, but this adapter declared "
                                  "no weight decay"),
    ({"weight_decay": ["coupled"]}, {"weight_decay": 0.125, "decay": "decoupled"},
     "decay: weight_decay 0.125 decoupled, but this adapter declared only coupled"),
])
def test_steps_outside_the_declared_options_are_rejected(fake_suite: Any, declared: Any,
                                                         options: dict[str, Any],
                                                         message: str) -> None:
    seen: list[sgdc_adapter.Case] = []

    def step(case: sgdc_adapter.Case) -> dict[str, Any]:
        seen.append(case)
        return momentum_step(case)

    suite = fake_suite(step, momentum=declared)
    suite.hello()
    assert suite.step(with_momentum(WORKED, **options)) == {"op": "error", "id": 1,
                                                            "message": message}
    assert not seen  # the step function never saw it


@pytest.mark.parametrize("options", [{"dampening": 0.0, "nesterov": False},
                                     {"weight_decay": 0.0, "decay": "decoupled"},
                                     {"weight_decay": -0.0}])
def test_options_left_at_zero_need_no_declaration(fake_suite: Any, options: dict[str, Any]) -> None:
    suite = fake_suite(momentum_step, momentum={})
    suite.hello()
    assert suite.step(with_momentum(WORKED, **options))["op"] == "result"


# --- results --------------------------------------------------------------------------

@pytest.mark.parametrize("binary", [False, True], ids=["base64", "binary"])
def test_the_buffer_after_the_step_is_returned(fake_suite: Any, binary: bool) -> None:
    suite = fake_suite(momentum_step, capabilities=("grads",), momentum=ALL_MOMENTUM)
    suite.hello(binary)
    out = suite.step(WORKED_MOMENTUM, 3)
    assert out["op"] == "result"
    assert out["grad_kernel"].tolist() == [5.0] and out["grad_bias"].tolist() == [3.0]
    assert out["momentum_kernel"].tolist() == [2.875] and out["momentum_bias"].tolist() == [2.0]
    assert out["kernel"].tobytes() == np.array([1 - F32(0.1) * F32(2.875)], F32).tobytes()
    assert out["bias"].tobytes() == np.array([-(F32(0.1) * F32(2))], F32).tobytes()


def test_a_plain_step_sends_no_buffer(fake_suite: Any) -> None:
    suite = fake_suite(lambda case: {**numpy_step(case), "momentum_kernel": np.zeros((1, 1), F32),
                                     "momentum_bias": np.zeros(1, F32)}, momentum=ALL_MOMENTUM)
    suite.hello()
    out = suite.step(WORKED)
    assert out["op"] == "result" and "momentum_kernel" not in out and "momentum_bias" not in out


@pytest.mark.parametrize("drop, change, message", [
    ("momentum_kernel", {}, "internal error: TypeError: step() result lacks 'momentum_kernel', "
                            "which a momentum step returns (the buffer after the step)"),
    ("momentum_bias", {}, "internal error: TypeError: step() result lacks 'momentum_bias', which "
                          "a momentum step returns (the buffer after the step)"),
    ("", {"momentum_kernel": np.zeros(3, F32)},
     "internal error: TypeError: step() result 'momentum_kernel' has shape (3,), expected (2, 1)"),
    ("", {"momentum_bias": np.zeros(1, np.float64)},
     "internal error: TypeError: expected float32 values, got float64"),
])
def test_the_buffer_is_required_and_checked(fake_suite: Any, drop: str, change: dict[str, Any],
                                            message: str) -> None:
    def step(case: sgdc_adapter.Case) -> dict[str, Any]:
        out = {**momentum_step(case), **change}
        out.pop(drop, None)
        return out

    suite = fake_suite(step, momentum=ALL_MOMENTUM)
    suite.hello()
    assert suite.step(with_momentum(make_case(3, 2, 1)))["message"] == message


def test_momentum_steps_in_batches(fake_suite: Any) -> None:
    cases = [make_case(4, 3, 2, seed=s) for s in range(6)]
    cases = [with_momentum(c, nesterov=True, seed=s) if s % 3 == 0 else
             with_momentum(c, buffer=False, weight_decay=0.01, decay="decoupled") if s % 3 == 1
             else c for s, c in enumerate(cases)]
    one = fake_suite(momentum_step, momentum=ALL_MOMENTUM)
    one.hello()
    expected = [one.step(c, i) for i, c in enumerate(cases)]
    batched = fake_suite(step_batch=lambda cs: [momentum_step(c) for c in cs], max_batch=6,
                         momentum=ALL_MOMENTUM)
    batched.hello(binary=True)
    for i, c in enumerate(cases):
        batched.send_case(c, i, batch_index=i, batch_size=6)
    for i, want in enumerate(expected):
        got = batched.recv()
        assert got["id"] == i and got["op"] == "result"
        keys = [key for key in ARRAYS + BUFFERS if key in want]
        assert keys == [key for key in ARRAYS + BUFFERS if key in got]
        assert all(got[key].tobytes() == want[key].tobytes() for key in keys)
    assert "momentum_kernel" in expected[0] and "momentum_kernel" not in expected[2]
