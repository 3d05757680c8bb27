"""pytest plugin (entry point `sgdc`): the `sgdc` fixture runs the suite against a step
function of the test process.

    def test_my_step(sgdc):
        sgdc.check(my_step, name="my-step", capabilities=("grads", "step_counter"))

    def test_my_torch_step(sgdc):          # the torch harness: sgdc_adapter.torch
        sgdc.check_torch(model_fn, optimizer_fn, train_step, name="my-torch-step")

`check` runs the suite's CLI ($SGDC_CLI, else `sgd-conformance` on PATH) with its adapter
served from this process (see `sgdc_adapter.suite`), and turns the verdict into the
test's outcome: NOT CONFORMANT fails the test with the text report (each failed
property's shrunk counterexample and replay line); "could not test" (exit 2) fails it
with the CLI's stderr; an adapter that is skipped (exit 77) skips it. No CLI found fails
the test with a message saying how to point at one, unless skipping is asked for
(`SGDC_MISSING=skip` in the environment, or `--sgdc-missing=skip`): a machine without
the suite then skips these tests instead; $SGDC_CLI naming no executable always fails.
A passing check's report (the property table) is printed at the end of the session
under `-v` or `--sgdc-summary`. `run` returns the result without judging it. Both return
a `SuiteResult` (verdict, JSON report, text report).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Unpack

import pytest

from ._serve import Adapter, Declarations, StepBatchFn, StepFn
from .suite import (CliNotFound, SuiteResult, failure_message, find_cli, plain_text,
                    run_suite)

MISSING_ENV = "SGDC_MISSING"
MISSING_CHOICES = ("fail", "skip")
_SUMMARIES = pytest.StashKey[list[tuple[str, str]]]()


class RunOptions(Declarations, total=False):
    """The keywords of `check` and `run` besides the step, its name and version: `serve`'s
    declarations and the run's options (see `sgdc_adapter.suite.run_suite`)."""
    cases: int | None
    seed: int | None
    properties: Sequence[str]
    case: int | None
    case_timeout: float | None
    extra_args: Sequence[str]
    timeout: float


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("sgdc", "sgd-conformance")
    group.addoption("--sgdc-missing", choices=MISSING_CHOICES, default=None,
                    help=f"without the suite's CLI: fail the test (default) or skip it; "
                         f"${MISSING_ENV} says the same")
    group.addoption("--sgdc-summary", action="store_true", default=False,
                    help="print each passing sgdc.check's report (also under -v)")


def _missing_policy(config: pytest.Config | None) -> str:
    """"fail" or "skip": what a missing CLI does, the option before the environment."""
    chosen = config.getoption("--sgdc-missing") if config is not None else None
    if chosen is None:
        chosen = os.environ.get(MISSING_ENV) or "fail"
        if chosen not in MISSING_CHOICES:
            pytest.fail(f"{MISSING_ENV}={chosen} is not one of {', '.join(MISSING_CHOICES)}",
                        pytrace=False)
    return str(chosen)


class Sgdc:
    """The `sgdc` fixture's value. The keywords of `check` and `run` are `serve`'s
    declarations and the run's options; `name` defaults to the step function's name."""

    def __init__(self, request: pytest.FixtureRequest | None = None) -> None:
        self.config = request.config if request is not None else None
        self.nodeid = request.node.nodeid if request is not None else ""

    def run(self, step: StepFn | None = None, *, step_batch: StepBatchFn | None = None,
            max_batch: int | None = None, name: str | None = None, version: str = "0",
            cases: int | None = None, seed: int | None = None,
            properties: Sequence[str] = (), case: int | None = None,
            case_timeout: float | None = None, extra_args: Sequence[str] = (),
            timeout: float = 600.0, **declarations: Unpack[Declarations]) -> SuiteResult:
        """Run the suite against the step. No CLI fails the test (skips it when asked
        to); $SGDC_CLI naming no executable fails it."""
        fn = step if step is not None else step_batch
        adapter = Adapter(step, step_batch=step_batch, max_batch=max_batch,
                          name=name or str(getattr(fn, "__name__", "pytest-step")), version=version,
                          **declarations)
        try:
            cli = find_cli()
        except CliNotFound as e:
            if not e.configured and _missing_policy(self.config) == "skip":
                pytest.skip(str(e))
            pytest.fail(str(e), pytrace=False)
        return run_suite(adapter, cli=cli, cases=cases, seed=seed, properties=properties,
                         case=case, case_timeout=case_timeout, extra_args=extra_args,
                         timeout=timeout)

    def check(self, step: StepFn | None = None, *, step_batch: StepBatchFn | None = None,
              max_batch: int | None = None, name: str | None = None, version: str = "0",
              cases: int | None = None, seed: int | None = None,
              properties: Sequence[str] = (), case: int | None = None,
              case_timeout: float | None = None, extra_args: Sequence[str] = (),
              timeout: float = 600.0, **declarations: Unpack[Declarations]) -> SuiteResult:
        """Run the suite and pass only on CONFORMANT (see the module docstring)."""
        result = self.run(step, step_batch=step_batch, max_batch=max_batch, name=name,
                          version=version, cases=cases, seed=seed, properties=properties,
                          case=case, case_timeout=case_timeout, extra_args=extra_args,
                          timeout=timeout, **declarations)
        what = name or str(getattr(step if step is not None else step_batch, "__name__", "the step"))
        if result.verdict == "skipped":
            pytest.skip(f"sgd-conformance skipped {what}: {result.stderr.strip()}")
        if result.verdict == "timed_out":
            pytest.fail(f"sgd-conformance did not finish within {timeout} s (killed)\n\n"
                        + failure_message(result, what), pytrace=False)
        if result.verdict != "conformant":
            pytest.fail(failure_message(result, what), pytrace=False)
        if self.config is not None:
            self.config.stash.setdefault(_SUMMARIES, []).append(
                (self.nodeid, plain_text(result.text)))
        return result

    def check_torch(self, model_fn: Any, optimizer_fn: Any = None, train_step: Any = None, *,
                    name: str = "torch", version: str | None = None,
                    **options: Unpack[RunOptions]) -> SuiteResult:
        """`check` of the torch harness (`sgdc_adapter.torch`): the user's
        `model_fn(d, k)`, `optimizer_fn(params, case_optimizer)` and
        `train_step(model, optimizer, x, y)`, declared as torch.optim supports unless
        `options` say otherwise. Skips the test when torch is not installed."""
        torch = pytest.importorskip("torch")
        from .torch import DECLARATIONS, TorchHarness
        merged: dict[str, Any] = {**DECLARATIONS, **options}
        harness = TorchHarness(model_fn, optimizer_fn, train_step,
                               precision=options.get("precision"))
        return self.check(harness, name=name,
                          version=version or torch.__version__, **merged)

    def check_fsdp2(self, *args: Any, **kwargs: Any) -> SuiteResult:
        """`sgdc_adapter.torch.check_fsdp2(sgdc, ...)` with this fixture: the FSDP2 harness,
        the user's model_fn, parallelize_fn, optimizer_fn and train_step."""
        from . import torch as harness
        return harness.check_fsdp2(self, *args, **kwargs)

    def check_nnx(self, *args: Any, **kwargs: Any) -> SuiteResult:
        """`sgdc_adapter.jax.check_nnx(...)`: the Flax NNX harness."""
        from . import jax as harness
        return harness.check_nnx(*args, **kwargs)

    def check_spmd(self, *args: Any, **kwargs: Any) -> SuiteResult:
        """`sgdc_adapter.jax.check_spmd(...)`: the JAX SPMD harness."""
        from . import jax as harness
        return harness.check_spmd(*args, **kwargs)

@pytest.fixture
def sgdc(request: pytest.FixtureRequest) -> Sgdc:
    """Runs the sgd-conformance suite against a step function of this process:
    `sgdc.check(step, name=..., capabilities=...)`, `sgdc.check_torch(model_fn, ...)`, and
    the other harnesses' `sgdc.check_fsdp2`, `sgdc.check_nnx`, `sgdc.check_spmd`."""
    return Sgdc(request)


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Each passing check's report, under -v or --sgdc-summary."""
    summaries = config.stash.get(_SUMMARIES, [])
    if not summaries or not (config.getoption("--sgdc-summary") or config.getoption("verbose") > 0):
        return
    terminalreporter.section("sgd-conformance: passing checks")
    for nodeid, text in summaries:
        terminalreporter.write_line(nodeid)
        for line in text.rstrip().splitlines():
            terminalreporter.write_line("  " + line)
