#!/usr/bin/env python3
"""Times the NumPy adapter's step in process, without the protocol, on the shapes of
bench/protocol_bench.cpp: compare with its round trips to get the protocol overhead.

    /usr/bin/python3 bench/numpy_step_inprocess.py [SIZES...]     default 8 32 64 128

Prints, per shape, the step alone and the step plus the adapter kit's own decoding and
encoding of the messages (the Python half of the protocol), in microseconds per case.
"""

import json
import os
import sys
import timeit

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "conformance", "python"))
sys.path.insert(0, os.path.join(here, "..", "conformance", "python", "adapters"))

import numpy as np  # noqa: E402
import sgdc_adapter  # noqa: E402
import numpy_step  # noqa: E402


def message(n, d, k, seed=1):
    rng = np.random.default_rng(seed)
    arr = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return {"op": "step", "id": 1, "n": n, "d": d, "k": k, "num_shards": 1, "step": 0,
            "lr": sgdc_adapter.encode(np.array([0.01], np.float32)),
            "kernel": sgdc_adapter.encode(arr(d, k)), "bias": sgdc_adapter.encode(arr(k)),
            "x": sgdc_adapter.encode(arr(n, d)), "y": sgdc_adapter.encode(arr(n, k))}


def best_us(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main(sizes):
    caps = ("grads", "step_counter")
    for s in sizes:
        line = json.dumps(message(s, s, s))
        case = sgdc_adapter.parse_case(json.loads(line))
        number = max(10, 20000 // (s * s))
        step = best_us(lambda: numpy_step.step(case), number)
        kit = best_us(lambda: json.dumps(sgdc_adapter.build_result(
            case, numpy_step.step(sgdc_adapter.parse_case(json.loads(line))), caps)), number)
        print(f"{s}^3: numpy step {step:.1f} us; with the kit's decode+encode {kit:.1f} us")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [8, 32, 64, 128])
