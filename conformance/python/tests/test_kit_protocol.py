"""The kit's side of protocol v1, driven in process by a fake suite over pipes: the
handshake, base64 and binary arrays, cases sent ahead, errors, large step counters."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import ARRAYS, F32, WORKED, enc, make_case, numpy_step, step_message


def test_hello_reply_without_optional_declarations(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step, name="my-step", version="1.0", capabilities=("grads",))
    assert suite.hello() == {
        "op": "hello", "protocol": 1, "name": "my-step", "version": "1.0",
        "capabilities": ["grads"], "subnormals": "ieee", "unit_roundoff": 2.0**-24,
        "sharded": False, "max_in_flight": 64}


def test_hello_reply_carries_every_declaration(fake_suite: Any) -> None:
    suite = fake_suite(step_batch=lambda cases: [numpy_step(c) for c in cases], max_batch=8,
                       capabilities=("grads", "step_counter", "shard_layout"), subnormals="ftz",
                       unit_roundoff=2.0**-11, sharded=True, max_shards=4,
                       counter=("uint32", "wrap"))
    hello = suite.hello(binary=True)
    assert hello["capabilities"] == ["grads", "step_counter", "shard_layout"]
    assert (hello["subnormals"], hello["unit_roundoff"], hello["sharded"]) == ("ftz", 2.0**-11, True)
    assert (hello["max_shards"], hello["max_batch"], hello["max_in_flight"]) == (4, 8, 64)
    assert hello["counter"] == {"dtype": "uint32", "at_end": "wrap"}
    assert hello["array_encoding"] == "binary"


def test_binary_arrays_only_when_offered(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    assert "array_encoding" not in suite.hello()
    suite.send({"op": "hello", "protocol": 1, "array_encodings": ["base64"]})
    assert "array_encoding" not in suite.recv()


@pytest.mark.parametrize("binary", [False, True], ids=["base64", "binary"])
def test_worked_example_bit_for_bit(fake_suite: Any, binary: bool) -> None:
    suite = fake_suite(numpy_step, capabilities=("grads", "step_counter"))
    suite.hello(binary)
    out = suite.step(WORKED, 7)
    assert out["op"] == "result"
    assert ("payload" in out) == binary
    assert out["loss"].tolist() == [2.5] and out["kernel"].tolist() == [0.5]
    assert out["bias"].tobytes() == np.array([-0.3], F32).tobytes()
    assert out["grad_kernel"].tolist() == [5.0] and out["grad_bias"].tolist() == [3.0]
    assert out["step"] == 1


def test_binary_and_base64_give_the_same_bits_beyond_a_pipe_buffer(fake_suite: Any) -> None:
    case = make_case(64, 64, 64, seed=5)
    text, binary = fake_suite(numpy_step), fake_suite(numpy_step)
    text.hello()
    binary.hello(binary=True)
    a, b = text.step(case), binary.step(case)
    assert all(a[key].tobytes() == b[key].tobytes() for key in ("loss", "kernel", "bias"))


def test_bad_arrays_reject_the_case_and_the_stream_stays_in_step(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    suite.hello()
    msg, _ = step_message(WORKED, 9)
    suite.send({**msg, "x": enc([1])})
    assert suite.recv() == {"op": "error", "id": 9,
                            "message": "x: expected 2 float32 values, got 4 bytes"}
    suite.send({**msg, "x": "!!"})
    assert suite.recv()["message"].startswith("x: bad base64")
    suite.send({**msg, "n": 0})
    assert suite.recv()["message"] == "n: expected an integer >= 1, got 0"
    assert suite.step(WORKED, 10)["loss"].tolist() == [2.5]


def test_bad_binary_references(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    suite.hello(binary=True)
    msg, payload = step_message(WORKED, 9, binary=True)
    msg["x"] = {"offset": len(payload) - 4, "count": 2}
    suite.send(msg, payload)
    assert suite.recv() == {"op": "error", "id": 9, "message":
                            "x: bytes 24 to 32 lie outside the 28-byte payload"}
    msg["x"] = enc(WORKED["x"])
    suite.send(msg, payload)
    assert suite.recv()["message"] == "x: expected a binary array reference {offset, count}"
    msg["x"] = {"offset": True, "count": 2}
    suite.send(msg, payload)
    assert suite.recv()["message"] == "x.offset: expected an integer >= 0, got True"
    assert suite.step(WORKED, 10)["loss"].tolist() == [2.5]


def test_a_payload_without_a_usable_size_ends_the_conversation(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    suite.hello(binary=True)
    msg, payload = step_message(WORKED, 3, binary=True)
    suite.send({**msg, "payload": "28"}, payload)
    assert suite.recv() == {"op": "error", "id": 3,
                            "message": "payload: expected an integer >= 0, got '28'"}
    suite.end()
    assert isinstance(suite.error, sgdc_adapter.ProtocolError)


def test_a_payload_cut_short_ends_the_conversation(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    suite.hello(binary=True)
    msg, payload = step_message(WORKED, 3, binary=True)
    suite.send(msg, payload[:10])
    suite.end()
    assert isinstance(suite.error, sgdc_adapter.ProtocolError)
    assert "18 bytes before the end of a 28-byte payload" in str(suite.error)


def test_malformed_messages_and_unknown_ops(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    suite.hello()
    suite.send("not json")
    reply = suite.recv()
    assert (reply["op"], reply["id"]) == ("error", None)
    assert reply["message"].startswith("malformed message:")
    suite.send("[1, 2]")
    assert suite.recv()["message"] == "malformed message: a message must be a JSON object"
    suite.send({"op": "dance", "id": 4})
    assert suite.recv() == {"op": "error", "id": 4, "message": "unknown op 'dance'"}
    suite.send("")  # blank lines are skipped
    assert suite.step(WORKED, 5)["op"] == "result"


def test_rejections_and_exceptions_answer_the_case(fake_suite: Any,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    def step(case: sgdc_adapter.Case) -> dict[str, Any]:
        if case.step == 1:
            raise sgdc_adapter.RejectCase("no thanks")
        if case.step == 2:
            raise ValueError("bad value")
        if case.step == 3:
            return {"loss": np.float32(0)}
        raise RuntimeError("boom")

    suite = fake_suite(step)
    suite.hello()
    answers = [suite.step({**WORKED, "step": s}, s) for s in (1, 2, 3, 4)]
    assert [a["message"] for a in answers] == [
        "no thanks", "bad value", "internal error: TypeError: step() result lacks 'kernel'",
        "internal error: RuntimeError: boom"]
    assert all(a["op"] == "error" for a in answers)
    suite.end()
    err = capsys.readouterr().err
    assert "RuntimeError: boom" in err and "ValueError: bad value" in err
    assert "no thanks" not in err  # a deliberate rejection prints no traceback


def test_output_checks(fake_suite: Any) -> None:
    outputs: list[dict[str, Any]] = [
        {**numpy_step(sgdc_adapter.parse_case(step_message(WORKED, 0)[0])), "kernel": np.zeros(3, F32)},
        {**numpy_step(sgdc_adapter.parse_case(step_message(WORKED, 0)[0])), "step": 1.5},
        {**numpy_step(sgdc_adapter.parse_case(step_message(WORKED, 0)[0])), "loss": np.float64(1)},
    ]
    suite = fake_suite(lambda case: outputs[case.step], capabilities=("grads", "step_counter"))
    suite.hello()
    messages = [suite.step({**WORKED, "step": i}, i)["message"] for i in range(3)]
    assert messages == [
        "internal error: TypeError: step() result 'kernel' has shape (3,), expected (1, 1)",
        "internal error: TypeError: step() result 'step' must be an int (or an integral float), "
        "got 1.5",
        "internal error: TypeError: expected float32 values, got float64"]


@pytest.mark.parametrize("step", [0, 2**31 - 1, 2**32 - 1, 2**53, 2**63 - 1, 2**64 + 5])
def test_step_counters_of_any_size(fake_suite: Any, step: int) -> None:
    suite = fake_suite(lambda case: {**numpy_step(case), "step": case.step + 1},
                       capabilities=("step_counter",))
    suite.hello(binary=True)
    out = suite.step({**WORKED, "step": step})
    assert out["step"] == step + 1 and type(out["step"]) is int


@pytest.mark.parametrize("value, reported", [(np.float32(2**24), 2**24), (np.float64(2.0**53), 2**53),
                                             (np.uint32(2**32 - 1), 2**32 - 1),
                                             (np.int64(2**63 - 1), 2**63 - 1)])
def test_counters_reported_from_numpy_scalars(fake_suite: Any, value: Any, reported: int) -> None:
    suite = fake_suite(lambda case: {**numpy_step(case), "step": value},
                       capabilities=("step_counter",))
    suite.hello()
    assert suite.step(WORKED)["step"] == reported


def test_negative_or_non_integer_step_is_rejected(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    suite.hello()
    assert suite.step({**WORKED, "step": -1})["message"] == "step: expected an integer >= 0, got -1"
    assert suite.step({**WORKED, "step": 1.0})["message"] == "step: expected an integer >= 0, got 1.0"


def test_cases_sent_ahead_are_answered_in_order(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step, capabilities=("grads",))
    suite.hello(binary=True)
    cases = [make_case(5, 3, 2, seed=s) for s in range(8)] + [make_case(64, 64, 64, seed=9)]
    expected = [suite.step(c, 100 + i) for i, c in enumerate(cases)]
    for i, c in enumerate(cases):
        suite.send_case(c, 200 + i)
    for i, want in enumerate(expected):
        got = suite.recv()
        assert got["id"] == 200 + i
        assert all(got[key].tobytes() == want[key].tobytes() for key in ARRAYS)


def test_bye_and_end_of_input_end_the_conversation(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    suite.hello()
    suite.send({"op": "bye"})
    suite.thread.join(10)
    assert not suite.thread.is_alive() and suite.error is None
    quiet = fake_suite(numpy_step)
    quiet.end()
    assert quiet.error is None


def test_shard_layout_is_reported(fake_suite: Any) -> None:
    suite = fake_suite(lambda case: {**numpy_step(case), "shards": [{"kernel": 1, "bias": np.int64(1)}]},
                       capabilities=("shard_layout",))
    suite.hello()
    assert suite.step(WORKED)["shards"] == [{"kernel": 1, "bias": 1}]
