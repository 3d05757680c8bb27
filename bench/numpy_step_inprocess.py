#!/usr/bin/env python3
"""Times the Python half of the protocol in process, on the shapes of
bench/protocol_bench.cpp: the NumPy adapter's step alone, and the step with the adapter
kit's decoding of the case and encoding of the result, for base64 and binary arrays.

    .venv/bin/python bench/numpy_step_inprocess.py [SIZES...]     default 8 32 64 128

Prints microseconds per case (best of 5 repeats of many cases).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import timeit
from collections.abc import Callable
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

CAPS = ("grads", "step_counter")


def arrays(n: int, d: int, k: int, seed: int = 1) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    arr = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return {"lr": np.array([0.01], np.float32), "kernel": arr(d, k), "bias": arr(k),
            "x": arr(n, d), "y": arr(n, k)}


def message(n: int, d: int, k: int, binary: bool) -> tuple[bytes, bytes]:
    """A step message as the suite sends it: (line bytes, payload bytes)."""
    writer = sgdc_adapter.Arrays(binary)
    msg = {"op": "step", "id": 1, "n": n, "d": d, "k": k, "num_shards": 1, "step": 0}
    msg.update({key: writer(a) for key, a in arrays(n, d, k).items()})
    if binary:
        msg["payload"] = writer.size
    return json.dumps(msg).encode(), b"".join(bytes(p) for p in writer.payload())


def round_trip_in_process(line: bytes, payload: bytes, binary: bool) -> list[Any]:
    """What the kit does for one case, minus the pipes: decode, step, encode."""
    msg = json.loads(line)
    case = sgdc_adapter.parse_case(msg, bytearray(payload) if binary else None)
    writer = sgdc_adapter.Arrays(binary)
    res = sgdc_adapter.build_result(case, numpy_step.step(case), CAPS, writer)
    return [json.dumps(res).encode(), *writer.payload()]  # what the kit hands to writev


def best_us(fn: Callable[[], object], number: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main(sizes: list[int]) -> None:
    for s in sizes:
        number = max(10, 20000 // (s * s))
        line, payload = message(s, s, s, False)
        case = sgdc_adapter.parse_case(json.loads(line))
        step = best_us(lambda: numpy_step.step(case), number)
        text = best_us(lambda: round_trip_in_process(line, payload, False), number)
        bline, bpayload = message(s, s, s, True)
        binary = best_us(lambda: round_trip_in_process(bline, bpayload, True), number)
        print(f"{s}^3: numpy step {step:.1f} us; with the kit's decode+encode: base64 "
              f"{text:.1f} us (+{text - step:.1f}), binary {binary:.1f} us (+{binary - step:.1f})")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [8, 32, 64, 128])
