"""Fixtures shared by the tests (helpers live in fakesuite.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fakesuite import FakeSuite


@pytest.fixture
def fake_suite() -> Iterator[Callable[..., FakeSuite]]:
    """Starts FakeSuite(step, **declarations) conversations; each ends with the test."""
    started: list[FakeSuite] = []

    def start(step: Callable[..., Any] | None = None, **declarations: Any) -> FakeSuite:
        suite = FakeSuite(step, **declarations)
        started.append(suite)
        return suite

    yield start
    for suite in started:
        suite.close()
