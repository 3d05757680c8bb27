#!/usr/bin/env python3
"""The NumPy adapter, timing its own step: what bench/protocol_bench.cpp subtracts from
each round trip to get the protocol's overhead, measured in the same process and run.

    .venv/bin/python bench/timed_adapter.py [--null]

Serves conformance/python/adapters/numpy_step.py unchanged; when the input ends it
writes one line to stderr: "timed-step: CASES cases, SECONDS s in step()". With --null
the step computes nothing (it returns the same arrays for every case of a shape), so a
round trip is the protocol alone: the suite's encoding and decoding, the pipes, the
wake-ups of both processes and the adapter kit.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import sys
import time
from types import ModuleType
from typing import Any

import numpy as np

import sgdc_adapter


def load_numpy_step() -> ModuleType:
    """conformance/python/adapters/numpy_step.py, imported as a module (main() not run)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "conformance", "python",
                        "adapters", "numpy_step.py")
    spec = importlib.util.spec_from_file_location("numpy_step", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


numpy_step = load_numpy_step()

spent = {"cases": 0, "seconds": 0.0}
answers: dict[tuple[int, int, int], Any] = {}  # --null: one answer per shape, computed once


def null_step(case: sgdc_adapter.Case) -> Any:
    key = (case.n, case.d, case.k)
    if key not in answers:
        answers[key] = numpy_step.step(case)
    return answers[key]


def timed(step: sgdc_adapter.StepFn) -> sgdc_adapter.StepFn:
    def run(case: sgdc_adapter.Case) -> Any:
        start = time.perf_counter()
        out = step(case)
        spent["seconds"] += time.perf_counter() - start
        spent["cases"] += 1
        return out
    return run


null = "--null" in sys.argv[1:]
atexit.register(lambda: print(f"timed-step: {spent['cases']} cases, {spent['seconds']!r} s in step()",
                              file=sys.stderr, flush=True))
sgdc_adapter.serve(timed(null_step if null else numpy_step.step),
                   name="numpy-null" if null else "numpy-timed", version=np.__version__,
                   capabilities=("grads", "step_counter"))
