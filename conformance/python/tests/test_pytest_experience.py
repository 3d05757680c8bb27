"""What a pytest user sees: a missing CLI fails the test unless skipping is asked for, a
passing check's report under -v or --sgdc-summary, and a Python float loss accepted
when it is exactly a float32."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import WORKED, numpy_step, step_message
from sgdc_adapter.suite import CliNotFound, find_cli

USER_TEST = """
    def test_my_step(sgdc):
        sgdc.check(lambda case: {}, name="my-step")
"""
NOT_FOUND = "*the sgd-conformance CLI was not found: set SGDC_CLI=*"


@pytest.fixture
def no_cli(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A user's test file, run where no CLI is configured or on PATH."""
    monkeypatch.delenv("SGDC_CLI", raising=False)
    monkeypatch.delenv("SGDC_MISSING", raising=False)
    monkeypatch.setenv("PATH", str(pytester.path))
    pytester.makepyfile(test_user=USER_TEST)
    return pytester


def test_no_cli_fails_and_says_how_to_point_at_it(no_cli: pytest.Pytester) -> None:
    result = no_cli.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([NOT_FOUND])


@pytest.mark.parametrize("how", ["option", "environment"])
def test_no_cli_skips_when_asked_to(no_cli: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
                                    how: str) -> None:
    args = ["-p", "no:cacheprovider", "-rs"]
    if how == "option":
        args.append("--sgdc-missing=skip")
    else:
        monkeypatch.setenv("SGDC_MISSING", "skip")
    result = no_cli.runpytest(*args)
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([NOT_FOUND])


def test_the_option_overrides_the_environment(no_cli: pytest.Pytester,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGDC_MISSING", "skip")
    no_cli.runpytest("-p", "no:cacheprovider", "--sgdc-missing=fail").assert_outcomes(failed=1)


def test_a_bad_sgdc_missing_is_named(no_cli: pytest.Pytester,
                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGDC_MISSING", "maybe")
    result = no_cli.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*SGDC_MISSING=maybe is not one of fail, skip*"])


PASSING_TEST = """
    import numpy as np

    def step(case):
        r = case.x @ case.kernel + case.bias - case.y
        count = np.float32(case.n * case.k)
        gk, gb = np.float32(2) * (case.x.T @ r) / count, np.float32(2) * r.sum(axis=0) / count
        return {"loss": np.sum(r * r) / count, "kernel": case.kernel - case.lr * gk,
                "bias": case.bias - case.lr * gb}

    def test_my_step(sgdc):
        sgdc.check(step, name="my-step", cases=3, properties=("accuracy",))
"""


@pytest.mark.parametrize("flag, shown", [(None, False), ("-v", True), ("--sgdc-summary", True)])
def test_a_passing_check_prints_its_report_when_asked(pytester: pytest.Pytester, flag: str | None,
                                                      shown: bool) -> None:
    try:
        find_cli()
    except CliNotFound as e:
        pytest.skip(str(e))
    pytester.makepyfile(test_user=PASSING_TEST)
    result = pytester.runpytest("-p", "no:cacheprovider", *([flag] if flag else []))
    result.assert_outcomes(passed=1)
    lines = "\n".join(result.outlines)
    assert ("sgd-conformance: passing checks" in lines) == shown, lines
    assert ("CONFORMANT: my-step" in lines) == shown, lines
    if shown:
        result.stdout.fnmatch_lines(["*test_user.py::test_my_step*", "*property*cases*verdict*",
                                     "*accuracy*3*pass*"])


def test_a_float_that_is_a_float32_is_accepted_and_one_that_is_not_is_rejected(
        fake_suite: Any) -> None:
    losses = [2.5, float("inf"), 0.1, 1e300]
    suite = fake_suite(lambda case: {**numpy_step(case), "loss": losses[case.step]})
    suite.hello()
    answers = [suite.step({**WORKED, "step": i}, i) for i in range(len(losses))]
    assert answers[0]["op"] == "result" and answers[0]["loss"].tolist() == [2.5]
    assert answers[1]["op"] == "result" and answers[1]["loss"].tolist() == [float("inf")]
    for a in answers[2:]:
        assert a == {"op": "error", "id": a["id"],
                     "message": "internal error: TypeError: expected float32 values, got float64"}


def test_a_nan_float_loss_is_a_float32_nan() -> None:
    case = sgdc_adapter.parse_case(step_message(WORKED, 1)[0])
    res = sgdc_adapter.build_result(case, {**numpy_step(case), "loss": float("nan")}, ())
    assert np.isnan(sgdc_adapter.decode(res["loss"], 1, "loss")).all()


@pytest.mark.parametrize("method, module", [("check_fsdp2", "sgdc_adapter.torch"),
                                            ("check_nnx", "sgdc_adapter.jax"),
                                            ("check_spmd", "sgdc_adapter.jax")])
def test_the_fixture_offers_every_harness(sgdc: Any, monkeypatch: pytest.MonkeyPatch,
                                          method: str, module: str) -> None:
    calls: list[tuple[Any, ...]] = []
    monkeypatch.setattr(importlib.import_module(module), method,
                        lambda *args, **kwargs: calls.append((args, kwargs)) or "result")
    assert getattr(sgdc, method)("model_fn", cases=3) == "result"
    args, kwargs = calls[0]
    assert args[-1] == "model_fn" and kwargs == {"cases": 3}
    assert (args[0] is sgdc) == (method == "check_fsdp2"), "only FSDP2 takes the fixture"
