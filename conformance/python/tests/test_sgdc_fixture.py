"""The `sgdc` pytest fixture: how a PyTorch, JAX or NumPy user tests a step function of
their own, and what they see when it is wrong.

These run the suite's CLI ($SGDC_CLI, else sgd-conformance on PATH); without it they
fail, as a user's tests do, unless SGDC_MISSING=skip.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import ALL_MOMENTUM, momentum_step, numpy_step
from sgdc_adapter.suite import CliNotFound, find_cli

CASES = 20  # per property: enough to catch the broken step, quick on two cores


@pytest.fixture
def cli() -> str:
    try:
        return find_cli()
    except CliNotFound as e:
        pytest.skip(str(e))


def wrong_sign_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """Moves the parameters up the gradient: p + lr*g."""
    out = numpy_step(case)
    with np.errstate(all="ignore"):
        out["kernel"] = case.kernel + case.lr * out["grad_kernel"]
        out["bias"] = case.bias + case.lr * out["grad_bias"]
    return out


def test_a_correct_numpy_step_conforms(sgdc: Any) -> None:
    result = sgdc.check(numpy_step, name="numpy-sample", capabilities=("grads", "step_counter"),
                        cases=CASES)
    assert result.verdict == "conformant" and result.exit_code == 0
    assert result.report["verdict"] == "conformant"
    assert "CONFORMANT: numpy-sample" in result.text


def test_a_broken_step_fails_with_the_counterexample_and_replay_line(sgdc: Any) -> None:
    with pytest.raises(pytest.fail.Exception) as info:
        sgdc.check(wrong_sign_step, name="wrong-sign", capabilities=("grads", "step_counter"),
                   cases=CASES)
    message = str(info.value)
    assert "sgd-conformance: wrong-sign is NOT CONFORMANT" in message
    assert "FAIL accuracy" in message and "shrunk in" in message
    assert "replay: " in message and "--property accuracy --case" in message
    assert "sgdc.check(<step>, <declarations>, seed=1, properties=('accuracy',), case=" in message


def test_the_failure_as_pytest_shows_it(pytester: pytest.Pytester, cli: str) -> None:
    pytester.makepyfile(test_user="""
        import numpy as np

        def step(case):  # the mean taken over the batch rows only: a bug when k > 1
            r = case.x @ case.kernel + case.bias - case.y
            n = np.float32(case.n)
            gk, gb = np.float32(2) * (case.x.T @ r) / n, np.float32(2) * r.sum(axis=0) / n
            return {"loss": np.sum(r * r) / n, "kernel": case.kernel - case.lr * gk,
                    "bias": case.bias - case.lr * gb, "grad_kernel": gk, "grad_bias": gb}

        def test_my_step(sgdc):
            sgdc.check(step, name="my-step", capabilities=("grads",), cases=20)
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*my-step is NOT CONFORMANT*", "*FAIL accuracy: case*",
                                 "*replay: *--seed 1 --property accuracy --case *"])


def test_run_returns_the_result_without_judging_it(sgdc: Any) -> None:
    result = sgdc.run(wrong_sign_step, name="wrong-sign", capabilities=("grads",), cases=CASES,
                      properties=("accuracy", "update_rule"), seed=3)
    assert result.verdict == "not_conformant" and result.exit_code == 1
    assert [p["name"] for p in result.report["properties"]] == ["accuracy", "update_rule"]
    assert all(r["seed"] == 3 for r in result.replays())
    again = sgdc.run(wrong_sign_step, name="wrong-sign", capabilities=("grads",),
                     **result.replays()[0])  # the replay of the first failure, in process
    assert again.verdict == "not_conformant"


def test_a_closure_over_an_in_memory_model(sgdc: Any) -> None:
    class Model:
        """A stateful model the step refills: what a training loop would hold."""

        def __init__(self) -> None:
            self.steps_taken = 0

        def step(self, case: sgdc_adapter.Case) -> dict[str, Any]:
            self.steps_taken += 1
            return numpy_step(case)

    model = Model()
    sgdc.check(lambda case: model.step(case), name="closure", capabilities=("grads", "step_counter"),
               cases=CASES, properties=("accuracy",))
    assert model.steps_taken >= CASES


def test_a_batched_step_conforms(sgdc: Any) -> None:
    def step_batch(cases: list[sgdc_adapter.Case]) -> list[Any]:  # int64 counter, saturating
        return [{**numpy_step(c), "step": min(c.step + 1, 2**63 - 1)} for c in cases]

    sgdc.check(step_batch=step_batch, max_batch=8, name="batched",
               capabilities=("grads", "step_counter"), counter=("int64", "saturate"), cases=CASES)


def test_a_hanging_step_is_cut_off_by_the_timeout(sgdc: Any) -> None:
    release = threading.Event()

    def hang(case: sgdc_adapter.Case) -> dict[str, Any]:
        release.wait(60)
        return numpy_step(case)

    start = time.monotonic()
    try:
        with pytest.raises(pytest.fail.Exception, match="did not finish within 2 s"):
            sgdc.check(hang, name="hang", cases=CASES, timeout=2)
    finally:
        release.set()
    assert time.monotonic() - start < 20


def test_could_not_test_fails_with_the_cli_stderr(sgdc: Any) -> None:
    with pytest.raises(pytest.fail.Exception) as info:
        sgdc.check(numpy_step, name="numpy", extra_args=("--arrays", "nonsense"))
    assert "could not test numpy (could_not_test)" in str(info.value)
    assert "--arrays: nonsense not in" in str(info.value)


def test_a_wrong_sgdc_cli_fails(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGDC_CLI", str(pytester.path / "no-such-cli"))
    pytester.makepyfile(test_user="""
        def test_my_step(sgdc):
            sgdc.check(lambda case: {}, name="my-step")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*SGDC_CLI=*no-such-cli is not an executable file*"])


def test_float_steps_in_a_numpy_user_test(sgdc: Any) -> None:
    """What a user with a float32 step counter writes: the counter's type declared."""
    def step(case: sgdc_adapter.Case) -> dict[str, Any]:
        return {**numpy_step(case), "step": np.float32(case.step) + np.float32(1)}

    sgdc.check(step, name="float-counter", capabilities=("grads", "step_counter"),
               counter=("float32", "saturate"), cases=CASES, properties=("step_counter",))


def output_chunks_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """The NumPy step reporting the layout of FSDP2's Shard(0): k split as torch.chunk."""
    chunk = -(-case.k // case.num_shards)
    rows = [min(chunk, max(0, case.k - s * chunk)) for s in range(case.num_shards)]
    return {**numpy_step(case), "shards": [{"kernel": r * case.d, "bias": r} for r in rows]}


def test_the_declared_placement_is_the_rule_the_suite_checks(sgdc: Any) -> None:
    declared = dict(name="chunks", capabilities=("grads", "shard_layout"), cases=CASES,
                    properties=("placement",))
    result = sgdc.check(output_chunks_step, placement="output_chunks", **declared)
    assert "placement output_chunks" in result.text
    # The same layout judged by the default (flat) rule: a placement violation.
    wrong = sgdc.run(output_chunks_step, placement="flat", **declared)
    assert wrong.verdict == "not_conformant", wrong.text
    assert "the flat rule" in wrong.text


def test_a_momentum_step_conforms_and_a_momentum_bug_fails(sgdc: Any) -> None:
    sgdc.check(momentum_step, name="momentum", capabilities=("grads",), momentum=ALL_MOMENTUM,
               cases=CASES)

    def decoupled_as_coupled(case: sgdc_adapter.Case) -> dict[str, Any]:
        if case.optimizer is not None and case.optimizer.decay == "decoupled":
            case.optimizer = dataclasses.replace(case.optimizer, decay="coupled")
        return momentum_step(case)

    result = sgdc.run(decoupled_as_coupled, name="decay-swapped", capabilities=("grads",),
                      momentum={"weight_decay": ["decoupled"]}, cases=CASES,
                      properties=("accuracy",))
    assert result.verdict == "not_conformant", result.text
    assert "weight_decay=" in result.text and "(decoupled)" in result.text


def tf32(a: Any) -> Any:
    """float32 values rounded to TF32 (10 fraction bits, ties to even), as tensor cores
    read their inputs; NaN and infinity kept."""
    a = np.asarray(a, dtype=np.float32)
    bits = a.view(np.uint32)
    rounded = (bits + np.uint32(0x0FFF) + ((bits >> np.uint32(13)) & np.uint32(1))) \
        & np.uint32(0xFFFFE000)
    return np.where(np.isfinite(a), rounded.view(np.float32), a)


def tf32_matmul_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """The NumPy step with both matrix products' inputs rounded to TF32."""
    with np.errstate(all="ignore"):
        r = tf32(case.x) @ tf32(case.kernel) + case.bias - case.y
        count = np.float32(case.n * case.k)
        gk = np.float32(2) * (tf32(case.x).T @ tf32(r)) / count
        gb = np.float32(2) * r.sum(axis=0) / count
        return {"loss": np.sum(r * r) / count,
                "kernel": case.kernel - case.lr * gk, "bias": case.bias - case.lr * gb,
                "grad_kernel": gk, "grad_bias": gb, "step": case.step + 1}


def test_a_tf32_step_conforms_as_declared_and_not_otherwise(sgdc: Any) -> None:
    declared = dict(name="tf32", capabilities=("grads",), cases=CASES)
    result = sgdc.check(tf32_matmul_step, compute_format="tf32", **declared)
    assert "compute format tf32" in result.text
    # The same step judged as float32 arithmetic.
    assert sgdc.run(tf32_matmul_step, **declared).verdict == "not_conformant"
