"""Smoke test of the Python adapters, driven through protocol v1 as the suite drives them.

    python3 conformance/python/tests/test_adapters.py [--bench]     # or: pytest conformance/python/tests

Checks the worked example of step.md bit for bit, a few random cases against a float64
NumPy computation with a loose tolerance (the real checking is the C++ suite's job),
protocol error handling, that each adapter's declared subnormal policy matches what
it does, and that every numpy mutant changes at least one output. The torch and flax
checks are skipped when that framework is missing. --bench prints each adapter's
round-trip time per 64x64x64 case.
"""

import base64
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.dirname(HERE)
ADAPTERS = os.path.join(PYDIR, "adapters")
F32 = np.float32
MUTANTS = ("post_update_loss", "mean_over_batch", "grad_times_shards", "drop_remainder_rows",
           "mean_of_shard_means", "half_precision_grad", "reshape_not_transpose", "wrong_sign",
           "missing_factor_two", "bias_not_updated", "lr_twice", "step_not_advanced",
           "nondeterministic", "skip_tiny_updates", "unbiased_mean")


def _python_with(module):
    """An interpreter that can import `module`: this one, else Debian's /usr/bin/python3."""
    for py in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if os.path.exists(py) and subprocess.run([py, "-c", f"import {module}"],
                                                 capture_output=True).returncode == 0:
            return py
    return None


def adapter_command(name):
    """The command line that starts adapter `name`, or None when its framework is missing."""
    if name == "numpy":
        return [sys.executable, os.path.join(ADAPTERS, "numpy_step.py")]
    if name == "torch":
        py = _python_with("torch")
        return py and [py, os.path.join(ADAPTERS, "torch_step.py")]
    if name == "flax":
        venv = os.environ.get("SGDC_FLAX_VENV", os.path.join(PYDIR, "..", "..", ".venv-flax"))
        return [os.path.join(PYDIR, "run-flax-adapter")] if os.path.exists(
            os.path.join(venv, "bin", "python")) else None
    if name.startswith("numpy-mutant-"):
        return adapter_command("numpy") + ["--mutant", name[len("numpy-mutant-"):]]
    raise KeyError(name)


def enc(a):
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode()


def dec(s):
    return np.frombuffer(base64.b64decode(s), dtype="<f4")


def step_message(case, mid):
    msg = {"op": "step", "id": mid, **{k: case[k] for k in ("n", "d", "k", "num_shards", "step")}}
    msg.update({k: enc(case[k]) for k in ("lr", "kernel", "bias", "x", "y")})
    return msg


ARRAYS = ("loss", "kernel", "bias", "grad_kernel", "grad_bias")


def binary_step_message(case, mid):
    """A step message with binary arrays: (line object, payload bytes)."""
    msg = {"op": "step", "id": mid, **{k: case[k] for k in ("n", "d", "k", "num_shards", "step")}}
    payload = b""
    for key in ("lr", "kernel", "bias", "x", "y"):
        raw = np.ascontiguousarray(case[key], dtype="<f4").tobytes()
        msg[key] = {"offset": len(payload), "count": len(raw) // 4}
        payload += raw
    msg["payload"] = len(payload)
    return msg, payload


class Adapter:
    """A running adapter process, spoken to through the protocol; with `binary`, the
    hello offers binary arrays."""

    def __init__(self, cmd, binary=False):
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log)
        self.next_id = 0
        hello = {"op": "hello", "protocol": 1}
        if binary:
            hello["array_encodings"] = ["base64", "binary"]
        self.hello = self.request(hello)
        self.binary = self.hello.get("array_encoding") == "binary"
        assert self.binary == binary, self.hello

    def send_line(self, line, payload=b""):
        self.proc.stdin.write(line.encode() + b"\n" + payload)
        self.proc.stdin.flush()
        reply = self.proc.stdout.readline()
        if not reply:
            self.log.seek(0)
            raise AssertionError(f"adapter died; stderr:\n{self.log.read().decode(errors='replace')}")
        return json.loads(reply)

    def request(self, msg, payload=b""):
        return self.send_line(json.dumps(msg), payload)

    def read_payload(self, reply):
        """The reply's arrays as float32 arrays (binary: read from the payload after it)."""
        if not self.binary:
            return {k: (dec(v) if k in ARRAYS else v) for k, v in reply.items()}
        raw = self.proc.stdout.read(reply.get("payload", 0))
        return {k: (np.frombuffer(raw, "<f4", v["count"], v["offset"]) if k in ARRAYS else v)
                for k, v in reply.items()}

    def step(self, case):
        self.next_id += 1
        if self.binary:
            reply = self.read_payload(self.request(*binary_step_message(case, self.next_id)))
        else:
            reply = self.read_payload(self.request(step_message(case, self.next_id)))
        assert reply.get("id") == self.next_id, reply
        if reply["op"] != "result":
            raise AssertionError(f"adapter answered {reply}")
        return {k: v for k, v in reply.items() if k not in ("op", "id", "payload")}

    def close(self):
        self.proc.stdin.write(b'{"op":"bye"}\n')
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


_running = {}


def adapter(name):
    """The shared running adapter `name`; SkipTest when its framework is missing."""
    if name not in _running:
        cmd = adapter_command(name)
        if cmd is None:
            raise unittest.SkipTest(f"{name}: framework not installed")
        _running[name] = Adapter(cmd)
    return _running[name]


def make_case(n, d, k, *, num_shards=1, step=0, lr=0.05, seed=0, **fixed):
    rng = np.random.default_rng(seed)
    case = dict(n=n, d=d, k=k, num_shards=num_shards, step=step, lr=F32(lr),
                kernel=(rng.standard_normal((d, k)) / np.sqrt(d)).astype(F32),
                bias=rng.standard_normal(k).astype(F32),
                x=rng.standard_normal((n, d)).astype(F32),
                y=rng.standard_normal((n, k)).astype(F32))
    case.update({key: np.asarray(v, dtype=F32) for key, v in fixed.items()})
    return case


WORKED = make_case(2, 1, 1, lr=0.1, kernel=[[1]], bias=[0], x=[[1], [2]], y=[[0], [0]])


def reference(case):
    """float64 results, and the magnitudes that the rounding errors scale with."""
    x, y, w, b = (case[key].astype(np.float64) for key in ("x", "y", "kernel", "bias"))
    lr, c = float(case["lr"]), case["n"] * case["k"]
    r = x @ w + b - y
    s = np.abs(x) @ np.abs(w) + np.abs(b) + np.abs(y)        # scale of r's error
    gw, gb = 2 / c * x.T @ r, 2 / c * r.sum(0)
    sgw, sgb = 2 / c * np.abs(x).T @ s, 2 / c * s.sum(0)
    return {"loss": ((r * r).mean(), (s * s).mean()),
            "grad_kernel": (gw, sgw), "grad_bias": (gb, sgb),
            "kernel": (w - lr * gw, np.abs(w) + lr * sgw), "bias": (b - lr * gb, np.abs(b) + lr * sgb)}


def check_worked_example(name):
    a = adapter(name)
    out = a.step(WORKED)
    assert out["loss"].tolist() == [2.5] and out["kernel"].tolist() == [0.5], out
    assert out["bias"].tobytes() == np.array([-0.3], F32).tobytes(), out["bias"]
    if "grads" in a.hello["capabilities"]:
        assert out["grad_kernel"].tolist() == [5.0] and out["grad_bias"].tolist() == [3.0], out
    if "step_counter" in a.hello["capabilities"]:
        assert out["step"] == 1, out


def check_random_cases(name):
    a = adapter(name)
    shapes = [(1, 1, 1), (3, 2, 5), (17, 8, 3), (64, 64, 64), (5, 1, 9)]
    for i, (n, d, k) in enumerate(shapes):
        case = make_case(n, d, k, num_shards=1 + i % 3, step=41 * i, lr=0.01 * (i + 1), seed=i)
        out = a.step(case)
        for key, (ref, scale) in reference(case).items():
            if key.startswith("grad") and "grads" not in a.hello["capabilities"]:
                continue
            err = np.abs(out[key] - np.ravel(ref))
            assert np.all(err <= 1e-4 * np.ravel(scale) + 1e-30), (name, (n, d, k), key, err.max())
        if "step_counter" in a.hello["capabilities"]:
            assert out["step"] == case["step"] + 1


def check_subnormal_policy(name):
    """Measure flushing: a subnormal input (x = 2**-130) and a subnormal result (loss = 2**-128)."""
    a = adapter(name)
    daz = a.step(make_case(1, 1, 1, lr=0, kernel=[[2.0 ** 100]], bias=[0], x=[[2.0 ** -130]], y=[[0]]))
    ftz = a.step(make_case(1, 1, 1, lr=0, kernel=[[0]], bias=[2.0 ** -64], x=[[0]], y=[[0]]))
    keeps_inputs, keeps_results = daz["loss"][0] == 2.0 ** -60, ftz["loss"][0] == 2.0 ** -128
    measured = "ieee" if keeps_inputs and keeps_results else "ftz"
    print(f"{name}: subnormal inputs {'kept' if keeps_inputs else 'flushed'}, subnormal results "
          f"{'kept' if keeps_results else 'flushed'}; declares {a.hello['subnormals']!r}", file=sys.stderr)
    assert a.hello["subnormals"] == measured, (name, a.hello["subnormals"], measured)


for _name in ("numpy", "torch", "flax"):
    for _check in (check_worked_example, check_random_cases, check_subnormal_policy):
        def _test(_n=_name, _c=_check):
            _c(_n)
        _test.__name__ = f"test_{_check.__name__[len('check_'):]}_{_name}"
        globals()[_test.__name__] = _test


def test_hello_and_protocol_errors():
    a = Adapter(adapter_command("numpy"))
    h = a.hello
    assert (h["op"], h["protocol"], h["name"], h["sharded"]) == ("hello", 1, "numpy", False), h
    assert h["unit_roundoff"] == 2.0 ** -24 and h["subnormals"] in ("ieee", "ftz"), h
    assert a.send_line("not json")["op"] == "error"
    assert "array_encoding" not in h, "binary arrays chosen without an offer"
    bad = {**step_message(WORKED, 9), "x": enc([1])}  # x too short
    assert a.request(bad) == {"op": "error", "id": 9,
                              "message": "x: expected 2 float32 values, got 4 bytes"}
    assert a.request({**bad, "x": "!!"})["op"] == "error"
    check = a.step(WORKED)  # still alive and right
    assert check["loss"].tolist() == [2.5]
    assert a.close() == 0
    eof = subprocess.run(adapter_command("numpy"), input="", capture_output=True, text=True)
    assert eof.returncode == 0 and eof.stdout == "", eof


def test_binary_arrays():
    a = Adapter(adapter_command("numpy"), binary=True)
    out = a.step(WORKED)
    assert out["loss"].tolist() == [2.5] and out["kernel"].tolist() == [0.5], out
    assert out["bias"].tobytes() == np.array([-0.3], F32).tobytes(), out["bias"]
    assert out["grad_kernel"].tolist() == [5.0] and out["step"] == 1, out
    # The same bits as through base64, on a case larger than a pipe buffer.
    case = make_case(64, 64, 64, seed=5)
    text = adapter("numpy").step(case)
    binary = a.step(case)
    assert all(text[k].tobytes() == binary[k].tobytes() for k in ARRAYS), "binary != base64"
    # A bad reference is the case's rejection, and the stream stays in step.
    msg, payload = binary_step_message(WORKED, 9)
    msg["x"]["offset"] = len(payload) - 4
    assert a.request(msg, payload) == {"op": "error", "id": 9, "message":
                                       "x: bytes 24 to 32 lie outside the 28-byte payload"}
    msg["x"] = enc(WORKED["x"])
    assert a.request(msg, payload)["message"] == "x: expected a binary array reference {offset, count}"
    assert a.step(WORKED)["loss"].tolist() == [2.5]
    assert a.close() == 0


def test_cases_sent_ahead():
    a = Adapter(adapter_command("numpy"), binary=True)
    assert a.hello["max_in_flight"] >= 8, a.hello
    cases = [make_case(5, 3, 2, seed=s) for s in range(8)] + [make_case(64, 64, 64, seed=9)]
    expected = [a.step(c) for c in cases]
    # All sent before any answer is read: answered in order, the same bits.
    for i, c in enumerate(cases):
        msg, payload = binary_step_message(c, 100 + i)
        a.proc.stdin.write(json.dumps(msg).encode() + b"\n" + payload)
    a.proc.stdin.flush()
    for i, want in enumerate(expected):
        got = a.read_payload(json.loads(a.proc.stdout.readline()))
        assert got["id"] == 100 + i, got
        assert all(got[k].tobytes() == want[k].tobytes() for k in ARRAYS), i
    assert a.close() == 0


def test_stray_output_rejection_and_crash():
    script = (f"import sys, os; sys.path.insert(0, {PYDIR!r}); import sgdc_adapter as s\n"
              "def step(case):\n"
              "    print('stray print'); os.write(1, b'stray fd write\\n')\n"
              "    if case.n == 2: raise s.RejectCase('no thanks')\n"
              "    raise RuntimeError('boom')\n"
              "s.serve(step, name='t', version='0')\n")
    a = Adapter([sys.executable, "-c", script])
    case = dict(WORKED)
    assert a.request(step_message(case, 1)) == {"op": "error", "id": 1, "message": "no thanks"}
    case.update(n=1, x=case["x"][:1], y=case["y"][:1])
    reply = a.request(step_message(case, 2))
    assert reply["op"] == "error" and "boom" in reply["message"], reply
    assert a.close() == 0
    a.log.seek(0)
    log = a.log.read().decode()
    assert "stray print" in log and "stray fd write" in log and "RuntimeError" in log, log


def test_unknown_mutant_exits_2():
    r = subprocess.run(adapter_command("numpy") + ["--mutant", "no_such_bug"], input="",
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stdout == "" and "no_such_bug" in r.stderr, r


def test_every_mutant_changes_an_output():
    # 7 rows over 3 shards: uneven (3, 2, 2) and a remainder. Targets lie close to the
    # fit around a large kernel, so some updates fall below 1e-6 of their parameter.
    case = make_case(7, 3, 2, num_shards=3, step=5, lr=0.1, seed=3)
    case["kernel"] = (case["kernel"] * 100).astype(F32)
    case["y"] = (case["x"] @ case["kernel"] + case["bias"] + 1e-3 * case["y"]).astype(F32)
    clean = adapter("numpy").step(case)
    unchanged = []
    for m in MUTANTS:
        a = Adapter(adapter_command(f"numpy-mutant-{m}"))
        out = a.step(case)
        if all(np.array_equal(out[key], clean[key]) for key in clean):
            unchanged.append(m)
        assert a.close() == 0
    assert not unchanged, f"mutants that changed nothing: {unchanged}"


def bench(repeats=20):
    case = make_case(64, 64, 64, seed=7)
    for name in ("numpy", "torch", "flax"):
        try:
            a = adapter(name)
        except unittest.SkipTest as e:
            print(f"{name}: skipped ({e})")
            continue
        a.step(case)  # warm-up (jit compile)
        t = time.perf_counter()
        for _ in range(repeats):
            a.step(case)
        print(f"{name}: {1e3 * (time.perf_counter() - t) / repeats:.2f} ms per 64x64x64 case (round trip)")


def _main():
    if "--bench" in sys.argv:
        bench()
        return 0
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for name, fn in sorted((n, f) for n, f in globals().items() if n.startswith("test_") and callable(f)):
        try:
            fn()
            result = "passed"
        except unittest.SkipTest as e:
            result, name = "skipped", f"{name} ({e})"
        except Exception as e:  # noqa: BLE001
            result, name = "failed", f"{name}: {type(e).__name__}: {e}"
        counts[result] += 1
        print(f"{result.upper():8} {name}")
    for a in _running.values():
        a.close()
    print(f"{counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(_main())
