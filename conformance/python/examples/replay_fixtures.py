#!/usr/bin/env python3
"""Replay sgd-conformance fixtures with a NumPy float32 step, using only the standard
library and NumPy: replay_fixtures.py FIXTURE.json... (exit status 1 on any mismatch).
A plain SGD step without clipping: fixtures of another optimizer (inputs.optimizer) or with
clipping (inputs.clip) are skipped."""
import base64, json, sys, numpy as np

def array(a):  # the bits are authoritative: base64 of little-endian float32, row-major
    return np.frombuffer(base64.b64decode(a["float32"]), "<f4").reshape(a["shape"])

def ok(v, j, want):  # the acceptance rule of docs/error-model.md, section 7
    exact, bound = float(want["exact"][j]), want["bound"][j] + 2**-52 * abs(float(want["exact"][j]))
    if j in want["must_be_nonfinite"]: return not np.isfinite(v)
    return abs(v - exact) <= bound or (not np.isfinite(v) and j in want["may_overflow"])

bad, paths = [], [p for p in sys.argv[1:]
                  if not {"optimizer", "clip"} & set(json.load(open(p))["inputs"])]
for path in paths:
    fx = json.load(open(path))
    i = {name: array(v) for name, v in fx["inputs"].items() if isinstance(v, dict)}
    with np.errstate(all="ignore"):  # NaN, inf and overflow are judged by ok(), not warned about
        r = i["x"] @ i["kernel"] + i["bias"] - i["y"]
        gk, gb = 2 * (i["x"].T @ r) / np.float32(r.size), 2 * r.sum(0) / np.float32(r.size)
        got = {"loss": np.mean(r * r), "kernel": i["kernel"] - i["lr"] * gk,
               "bias": i["bias"] - i["lr"] * gb, "grad_kernel": gk, "grad_bias": gb}
    bad += [f"{path}: {name}[{j}] = {v!r}, exact {want['exact'][j]}, bound {want['bound'][j]}"
            for name, want in fx["outputs"].items() if name != "step"
            for j, v in enumerate(np.ravel(got[name]).astype(float)) if not ok(v, j, want)]
sys.exit("\n".join(bad) or print(f"{len(paths)} fixtures replayed, no mismatch, "
                                  f"{len(sys.argv) - 1 - len(paths)} skipped"))
