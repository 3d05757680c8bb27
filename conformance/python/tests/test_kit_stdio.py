"""The kit in a process of its own: importing it changes nothing, `serve` reserves stdout
for the protocol, `reserve_stdout` hands the real stdout to the adapter, exit statuses."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from fakesuite import WORKED, step_message

TIMEOUT = 60


def run_python(code: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], input=stdin,
                          capture_output=True, timeout=TIMEOUT)


def test_importing_the_kit_has_no_side_effects() -> None:
    r = run_python("""
        import os, sys
        before = (os.fstat(1).st_ino, sys.stdout)
        import sgdc_adapter, sgdc_adapter.suite, sgdc_adapter.relay, sgdc_adapter.pytest_plugin
        assert (os.fstat(1).st_ino, sys.stdout) == before, "stdout changed"
        print("still stdout")
    """)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"still stdout\n"


def test_reserve_stdout_keeps_the_real_stdout_for_the_adapter() -> None:
    r = run_python("""
        import os, sgdc_adapter
        out = sgdc_adapter.reserve_stdout()
        assert sgdc_adapter.reserve_stdout() is out
        print("a stray print")
        os.write(1, b"a stray fd write\\n")
        out.write(b"for the protocol\\n")
        out.flush()
    """)
    assert r.returncode == 0, r.stderr.decode()
    assert r.stdout == b"for the protocol\n"
    assert b"a stray print" in r.stderr and b"a stray fd write" in r.stderr


STRAY_ADAPTER = """
    import os, sgdc_adapter
    import numpy as np
    print("printed at import, before serve: on stdout")

    def step(case):
        print("stray print")
        os.write(1, b"stray fd write\\n")
        r = case.x @ case.kernel + case.bias - case.y
        g = np.float32(2) * (case.x.T @ r) / np.float32(case.n * case.k)
        gb = np.float32(2) * r.sum(axis=0) / np.float32(case.n * case.k)
        return {"loss": np.sum(r * r) / np.float32(case.n * case.k),
                "kernel": case.kernel - case.lr * g, "bias": case.bias - case.lr * gb}

    sgdc_adapter.serve(step, name="stray", version="0")
"""


def test_serve_reserves_stdout_when_it_starts() -> None:
    msg, _ = step_message(WORKED, 1)
    r = run_python(STRAY_ADAPTER, (json.dumps({"op": "hello", "protocol": 1}) + "\n"
                                   + json.dumps(msg) + "\n").encode())
    assert r.returncode == 0, r.stderr.decode()
    lines = r.stdout.decode().splitlines()
    assert lines[0] == "printed at import, before serve: on stdout"
    hello, result = (json.loads(line) for line in lines[1:])
    assert hello["name"] == "stray" and result["op"] == "result" and result["id"] == 1
    assert b"stray print" in r.stderr and b"stray fd write" in r.stderr


def test_serve_exits_0_at_end_of_input_with_nothing_written() -> None:
    r = run_python(STRAY_ADAPTER.replace('print("printed at import, before serve: on stdout")', ""))
    assert (r.returncode, r.stdout) == (0, b"")


def test_serve_exits_1_when_the_input_cannot_be_followed() -> None:
    msg, payload = step_message(WORKED, 1, binary=True)
    hello = {"op": "hello", "protocol": 1, "array_encodings": ["binary"]}
    r = run_python(STRAY_ADAPTER, (json.dumps(hello) + "\n" + json.dumps(msg) + "\n").encode()
                   + payload[:5])
    assert r.returncode == 1
    assert b"adapter: input ended 23 bytes before the end of a 28-byte payload" in r.stderr


def test_skip_and_require_exit_77_before_the_handshake() -> None:
    r = run_python("""
        import sgdc_adapter
        sgdc_adapter.require("json", "no_such_framework_here")
    """)
    assert (r.returncode, r.stdout) == (77, b"")
    assert b"adapter skipped: no_such_framework_here is not installed" in r.stderr
