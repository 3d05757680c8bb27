#!/usr/bin/env python3
"""The NumPy adapter, timing its own step: what bench/protocol_bench.cpp subtracts from
each round trip to get the protocol's overhead, measured in the same process and run.

    /usr/bin/python3 bench/timed_adapter.py [--null]

Serves conformance/python/adapters/numpy_step.py unchanged; when the input ends it
writes one line to stderr: "timed-step: CASES cases, SECONDS s in step()". With --null
the step computes nothing (it returns the same arrays for every case of a shape), so a
round trip is the protocol alone: the suite's encoding and decoding, the pipes, the
wake-ups of both processes and the adapter kit.
"""

import atexit
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "conformance", "python"))
sys.path.insert(0, os.path.join(here, "..", "conformance", "python", "adapters"))

import sgdc_adapter  # noqa: E402  (first: it reserves stdout for the protocol)
import numpy as np  # noqa: E402
import numpy_step  # noqa: E402

spent = {"cases": 0, "seconds": 0.0}
answers = {}  # --null: one answer per shape, computed once


def null_step(case):
    key = (case.n, case.d, case.k)
    if key not in answers:
        answers[key] = numpy_step.step(case)
    return answers[key]


def timed(step):
    def run(case):
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
