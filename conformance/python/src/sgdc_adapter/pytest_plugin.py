"""pytest plugin (entry point `sgdc`): the `sgdc` fixture runs the suite against a step
function of the test process.

    def test_my_step(sgdc):
        sgdc.check(my_step, name="my-step", capabilities=("grads", "step_counter"))

`check` runs the suite's CLI ($SGDC_CLI, else `sgd-conformance` on PATH) with its adapter
served from this process (see `sgdc_adapter.suite`), and turns the verdict into the
test's outcome: NOT CONFORMANT fails the test with the text report (each failed
property's shrunk counterexample and replay line); "could not test" (exit 2) fails it
with the CLI's stderr; an adapter that is skipped (exit 77) skips it; no CLI found
skips it with a message saying how to point at one ($SGDC_CLI naming no executable
fails it). `run` returns the result without
judging it. Both return a `SuiteResult` (verdict, JSON report, text report).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Unpack

import pytest

from ._serve import Adapter, Declarations, StepBatchFn, StepFn
from .suite import CliNotFound, SuiteResult, failure_message, find_cli, run_suite


class Sgdc:
    """The `sgdc` fixture's value. The keywords of `check` and `run` are `serve`'s
    declarations and the run's options; `name` defaults to the step function's name."""

    def run(self, step: StepFn | None = None, *, step_batch: StepBatchFn | None = None,
            max_batch: int | None = None, name: str | None = None, version: str = "0",
            cases: int | None = None, seed: int | None = None,
            properties: Sequence[str] = (), case: int | None = None,
            case_timeout: float | None = None, extra_args: Sequence[str] = (),
            timeout: float = 600.0, **declarations: Unpack[Declarations]) -> SuiteResult:
        """Run the suite against the step. No CLI on PATH skips the test; $SGDC_CLI
        naming no executable fails it."""
        fn = step if step is not None else step_batch
        adapter = Adapter(step, step_batch=step_batch, max_batch=max_batch,
                          name=name or str(getattr(fn, "__name__", "pytest-step")), version=version,
                          **declarations)
        try:
            cli = find_cli()
        except CliNotFound as e:
            if e.configured:  # pointed at, but wrong: a mistake to fix, not a skip
                pytest.fail(str(e), pytrace=False)
            pytest.skip(str(e))
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
        return result


@pytest.fixture
def sgdc() -> Sgdc:
    """Runs the sgd-conformance suite against a step function of this process:
    `sgdc.check(step, name=..., capabilities=...)`."""
    return Sgdc()
