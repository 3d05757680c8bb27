#!/usr/bin/env python3
"""Times the Python half of the protocol in process, on the shapes of
bench/protocol_bench.cpp: the NumPy adapter's step alone, and the step with the adapter
kit's decoding of the case and encoding of the result, for base64 and binary arrays.

    /usr/bin/python3 bench/numpy_step_inprocess.py [SIZES...]     default 8 32 64 128

Prints microseconds per case (best of 5 repeats of many cases).
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

CAPS = ("grads", "step_counter")


def arrays(n, d, k, seed=1):
    rng = np.random.default_rng(seed)
    arr = lambda *shape: rng.standard_normal(shape).astype(np.float32)  # noqa: E731
    return {"lr": np.array([0.01], np.float32), "kernel": arr(d, k), "bias": arr(k),
            "x": arr(n, d), "y": arr(n, k)}


def message(n, d, k, binary):
    """A step message as the suite sends it: (line bytes, payload bytes)."""
    writer = sgdc_adapter.Arrays(binary)
    msg = {"op": "step", "id": 1, "n": n, "d": d, "k": k, "num_shards": 1, "step": 0}
    msg.update({key: writer(a) for key, a in arrays(n, d, k).items()})
    if binary:
        msg["payload"] = writer.size
    return json.dumps(msg).encode(), b"".join(bytes(p) for p in writer.payload())


def round_trip_in_process(line, payload, binary):
    """What the kit does for one case, minus the pipes: decode, step, encode."""
    msg = json.loads(line)
    case = sgdc_adapter.parse_case(msg, bytearray(payload) if binary else None)
    writer = sgdc_adapter.Arrays(binary)
    res = sgdc_adapter.build_result(case, numpy_step.step(case), CAPS, writer)
    return [json.dumps(res).encode(), *writer.payload()]  # what the kit hands to writev


def best_us(fn, number):
    return min(timeit.repeat(fn, number=number, repeat=5)) / number * 1e6


def main(sizes):
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
