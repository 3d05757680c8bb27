"""Batches: `serve(step_batch=fn, max_batch=M)`, the step messages' batch_index and
batch_size, and what the kit answers when they are inconsistent."""

from __future__ import annotations

from typing import Any

import pytest

import sgdc_adapter
from fakesuite import WORKED, FakeSuite, make_case, numpy_step, step_message


class Recorder:
    """A step_batch that records the batches it was given (their steps)."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []

    def __call__(self, cases: list[sgdc_adapter.Case]) -> list[Any]:
        self.batches.append([c.step for c in cases])
        return [numpy_step(c) for c in cases]


def batch_suite(fake_suite: Any, fn: Any = None, max_batch: int = 4,
                binary: bool = True) -> tuple[FakeSuite, Any]:
    fn = fn if fn is not None else Recorder()
    suite = fake_suite(step_batch=fn, max_batch=max_batch, capabilities=("grads", "step_counter"))
    suite.hello(binary)
    return suite, fn


def send_batch(suite: FakeSuite, steps: list[int], first_id: int = 1, size: int | None = None) -> None:
    size = len(steps) if size is None else size
    for i, s in enumerate(steps):
        suite.send_case({**WORKED, "step": s}, first_id + i, batch_index=i, batch_size=size)


@pytest.mark.parametrize("binary", [False, True], ids=["base64", "binary"])
def test_a_batch_is_one_call_answered_case_by_case_in_order(fake_suite: Any, binary: bool) -> None:
    suite, rec = batch_suite(fake_suite, binary=binary)
    cases = [make_case(3, 2, 2, step=10 + i, seed=i) for i in range(3)]
    for i, c in enumerate(cases):
        suite.send_case(c, 50 + i, batch_index=i, batch_size=3)
    answers = [suite.recv() for _ in cases]
    assert [a["id"] for a in answers] == [50, 51, 52]
    assert [a["step"] for a in answers] == [11, 12, 13]
    assert rec.batches == [[10, 11, 12]]
    one = fake_suite(numpy_step, capabilities=("grads", "step_counter"))
    one.hello(binary)
    for c, a in zip(cases, answers):  # the same bits as served one at a time
        single = one.step(c)
        assert all(a[key].tobytes() == single[key].tobytes() for key in ("loss", "kernel", "bias"))


def test_the_kit_waits_for_the_last_case_of_a_batch(fake_suite: Any) -> None:
    suite, rec = batch_suite(fake_suite)
    send_batch(suite, [1, 2], size=3)
    assert suite.silent(0.3) and rec.batches == []
    suite.send_case({**WORKED, "step": 3}, 3, batch_index=2, batch_size=3)
    assert [suite.recv()["id"] for _ in range(3)] == [1, 2, 3]
    assert rec.batches == [[1, 2, 3]]


def test_a_message_without_batch_fields_is_a_batch_of_one(fake_suite: Any) -> None:
    suite, rec = batch_suite(fake_suite)
    assert suite.step({**WORKED, "step": 4})["step"] == 5
    assert suite.step({**WORKED, "step": 5}, batch_index=0, batch_size=1)["step"] == 6
    assert rec.batches == [[4], [5]]


def test_exception_instances_answer_only_their_case(fake_suite: Any) -> None:
    def fn(cases: list[sgdc_adapter.Case]) -> list[Any]:
        return [sgdc_adapter.RejectCase(f"step {c.step} declined") if c.step == 2 else
                RuntimeError("lost") if c.step == 3 else numpy_step(c) for c in cases]

    suite, _ = batch_suite(fake_suite, fn)
    send_batch(suite, [1, 2, 3, 4])
    answers = [suite.recv() for _ in range(4)]
    assert [a["op"] for a in answers] == ["result", "error", "error", "result"]
    assert answers[1]["message"] == "step 2 declined"
    assert answers[2]["message"] == "internal error: RuntimeError: lost"


def test_an_exception_raised_by_step_batch_answers_the_whole_batch(fake_suite: Any) -> None:
    def fn(cases: list[sgdc_adapter.Case]) -> list[Any]:
        raise sgdc_adapter.RejectCase(f"{len(cases)} cases: not today")

    suite, _ = batch_suite(fake_suite, fn)
    send_batch(suite, [1, 2, 3])
    assert [suite.recv()["message"] for _ in range(3)] == ["3 cases: not today"] * 3


def test_a_wrong_number_of_outputs_is_an_internal_error_for_each_case(fake_suite: Any) -> None:
    suite, _ = batch_suite(fake_suite, lambda cases: [numpy_step(cases[0])])
    send_batch(suite, [1, 2])
    assert [suite.recv()["message"] for _ in range(2)] == [
        "internal error: TypeError: step_batch returned 1 outputs for 2 cases"] * 2


def test_a_bad_case_inside_a_batch_does_not_reject_the_others(fake_suite: Any) -> None:
    suite, rec = batch_suite(fake_suite, binary=False)
    msg, _ = step_message({**WORKED, "step": 2}, 2, batch_index=1, batch_size=3)
    suite.send_case({**WORKED, "step": 1}, 1, batch_index=0, batch_size=3)
    suite.send({**msg, "bias": "!!"})
    suite.send_case({**WORKED, "step": 3}, 3, batch_index=2, batch_size=3)
    answers = [suite.recv() for _ in range(3)]
    assert [a["op"] for a in answers] == ["result", "error", "result"]
    assert answers[1]["message"].startswith("bias: bad base64")
    assert rec.batches == [[1, 3]]


@pytest.mark.parametrize("fields, message", [
    ({"batch_index": 0, "batch_size": 5}, "batch_size 5 is above max_batch 4"),
    ({"batch_size": 2}, "batch_size without batch_index: a batch's messages carry both"),
    ({"batch_index": 0}, "batch_index without batch_size: a batch's messages carry both"),
    ({"batch_index": 2, "batch_size": 2}, "batch_index 2 is not below batch_size 2"),
    ({"batch_index": -1, "batch_size": 2}, "batch_index: expected an integer >= 0, got -1"),
    ({"batch_index": True, "batch_size": 2}, "batch_index: expected an integer >= 0, got True"),
    ({"batch_index": 0, "batch_size": 0}, "batch_size: expected an integer >= 1, got 0"),
    ({"batch_index": 0, "batch_size": "2"}, "batch_size: expected an integer >= 1, got '2'"),
    ({"batch_index": 1, "batch_size": 2},
     "batch_index 1 (batch_size 2) without the batch's earlier cases: a batch starts at batch_index 0"),
])
def test_inconsistent_fields_are_answered_with_errors_naming_them(fake_suite: Any, fields: dict[str, Any],
                                                                  message: str) -> None:
    suite, rec = batch_suite(fake_suite)
    assert suite.step(WORKED, 8, **fields) == {"op": "error", "id": 8, "message": message}
    assert suite.step(WORKED, 9)["op"] == "result"  # and the kit goes on
    assert rec.batches == [[0]]


def test_an_index_out_of_order_breaks_the_batch_off(fake_suite: Any) -> None:
    suite, rec = batch_suite(fake_suite)
    suite.send_case(WORKED, 1, batch_index=0, batch_size=3)
    suite.send_case(WORKED, 2, batch_index=2, batch_size=3)
    first, second = suite.recv(), suite.recv()
    assert first == {"op": "error", "id": 1, "message": "batch of 3 cases broken off after 1: "
                     "the next step message (id 2) has batch_index 2, batch_size 3"}
    assert second["id"] == 2 and "a batch starts at batch_index 0" in second["message"]
    send_batch(suite, [7, 8], first_id=3)  # a new batch is served as usual
    assert [suite.recv()["step"] for _ in range(2)] == [8, 9]
    assert rec.batches == [[7, 8]]


def test_a_new_batch_or_a_single_case_mid_batch_breaks_the_old_one_off(fake_suite: Any) -> None:
    suite, rec = batch_suite(fake_suite)
    send_batch(suite, [1, 2], size=3)
    send_batch(suite, [3, 4], first_id=3)  # a batch of 2 starting before the first ended
    answers = [suite.recv() for _ in range(4)]
    assert [a["op"] for a in answers] == ["error", "error", "result", "result"]
    assert answers[0]["message"] == ("batch of 3 cases broken off after 2: the next step "
                                     "message (id 3) has batch_index 0, batch_size 2")
    suite.send_case(WORKED, 5, batch_index=0, batch_size=2)
    suite.send_case({**WORKED, "step": 6}, 6)
    answers = [suite.recv() for _ in range(2)]
    assert answers[0]["message"] == ("batch of 2 cases broken off after 1: the next step message "
                                     "(id 6) has batch_index 0, batch_size 1 (no batch fields)")
    assert answers[1]["step"] == 7
    assert rec.batches == [[3, 4], [6]]


def test_a_malformed_batch_field_mid_batch_answers_both(fake_suite: Any) -> None:
    suite, _ = batch_suite(fake_suite)
    suite.send_case(WORKED, 1, batch_index=0, batch_size=2)
    suite.send_case(WORKED, 2, batch_index=1, batch_size=9)
    first, second = suite.recv(), suite.recv()
    assert first["message"] == ("batch of 2 cases broken off after 1: the next step message "
                                "(id 2) is not part of it: batch_size 9 is above max_batch 4")
    assert second == {"op": "error", "id": 2, "message": "batch_size 9 is above max_batch 4"}


def test_other_messages_and_the_end_of_input_break_a_batch_off(fake_suite: Any) -> None:
    suite, _ = batch_suite(fake_suite)
    suite.send_case(WORKED, 1, batch_index=0, batch_size=2)
    suite.send("garbage")
    assert suite.recv()["message"] == "batch of 2 cases broken off after 1: a malformed message came"
    assert suite.recv()["message"].startswith("malformed message")
    suite.send_case(WORKED, 2, batch_index=0, batch_size=2)
    suite.end()
    assert suite.recv() == {"op": "error", "id": 2, "message":
                            "batch of 2 cases broken off after 1: the input ended"}


def test_a_one_case_adapter_takes_batches_of_one_only(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step)
    suite.hello()
    assert suite.step(WORKED, 1, batch_index=0, batch_size=1)["op"] == "result"
    assert suite.step(WORKED, 2, batch_index=0, batch_size=2)["message"] == (
        "batch_size 2 is above max_batch 1")
