"""Test helpers: a fake suite that speaks the protocol to the kit over pipes, in process,
and cases to send it."""

from __future__ import annotations

import base64
import json
import os
import select
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import sgdc_adapter

F32 = np.float32
ARRAYS = ("loss", "kernel", "bias", "grad_kernel", "grad_bias")
INPUTS = ("lr", "kernel", "bias", "x", "y")
# 1-element arrays, like lr
HYPERPARAMETERS = ("momentum", "dampening", "weight_decay", "b1", "b2", "eps", "eps_root",
                   "initial_accumulator_value")
BUFFERS = ("momentum_kernel", "momentum_bias")  # an input and, after the step, an output
SECOND_MOMENTS = ("second_moment_kernel", "second_moment_bias")  # Adam's, the same way
# Every option of SGD with momentum, as a hello's "momentum" declares it.
ALL_MOMENTUM = {"dampening": True, "nesterov": True, "weight_decay": ["coupled", "decoupled"]}
# Every option of Adam, as a hello's "adam" declares it.
ALL_ADAM = {"weight_decay": ["coupled", "decoupled"], "eps_root": True}
ANSWER_TIMEOUT = 20.0  # seconds the suite's side waits for an answer before failing the test


def make_case(n: int, d: int, k: int, *, num_shards: int = 1, step: int = 0, lr: float = 0.05,
              seed: int = 0, **fixed: Any) -> dict[str, Any]:
    """A case as a dict of the step message's fields (arrays as float32 numpy arrays)."""
    rng = np.random.default_rng(seed)
    case = dict(n=n, d=d, k=k, num_shards=num_shards, step=step, lr=F32(lr),
                kernel=(rng.standard_normal((d, k)) / np.sqrt(d)).astype(F32),
                bias=rng.standard_normal(k).astype(F32),
                x=rng.standard_normal((n, d)).astype(F32),
                y=rng.standard_normal((n, k)).astype(F32))
    case.update({key: np.asarray(v, dtype=F32) for key, v in fixed.items()})
    return case


def with_momentum(case: dict[str, Any], *, momentum: float = 0.9, dampening: float = 0.0,
                  nesterov: bool = False, weight_decay: float = 0.0, decay: str = "coupled",
                  buffer: bool = True, seed: int = 1) -> dict[str, Any]:
    """`case` as a momentum step: its fields "optimizer", the hyperparameters, and with
    `buffer` a random buffer before the step (else fresh state)."""
    out = {**case, "optimizer": "momentum", "momentum": F32(momentum),
           "dampening": F32(dampening), "nesterov": nesterov, "weight_decay": F32(weight_decay),
           "decay": decay}
    if buffer:
        rng = np.random.default_rng(seed)
        out["momentum_kernel"] = rng.standard_normal(case["kernel"].shape).astype(F32)
        out["momentum_bias"] = rng.standard_normal(case["bias"].shape).astype(F32)
    return out


def with_adam(case: dict[str, Any], *, b1: float = 0.9, b2: float = 0.999, eps: float = 1e-8,
              eps_root: float = 0.0, weight_decay: float = 0.0, decay: str = "coupled",
              state: bool = True, seed: int = 1) -> dict[str, Any]:
    """`case` as an Adam step: its fields "optimizer", the hyperparameters, and with
    `state` random moments before the step (the second >= 0), else fresh state."""
    out = {**case, "optimizer": "adam", "b1": F32(b1), "b2": F32(b2), "eps": F32(eps),
           "eps_root": F32(eps_root), "weight_decay": F32(weight_decay), "decay": decay}
    if state:
        rng = np.random.default_rng(seed)
        out["momentum_kernel"] = rng.standard_normal(case["kernel"].shape).astype(F32)
        out["momentum_bias"] = rng.standard_normal(case["bias"].shape).astype(F32)
        for name in ("kernel", "bias"):
            out["second_moment_" + name] = np.square(rng.standard_normal(case[name].shape)).astype(F32)
    return out


# The worked example of docs/spec/step.md: loss 2.5, kernel 0.5, bias -0.3.
def with_adagrad(case: dict[str, Any], *, eps: float = 1e-10, eps_root: float = 0.0,
                 initial_accumulator_value: float = 0.0, weight_decay: float = 0.0,
                 decay: str = "coupled", state: bool = True, seed: int = 1) -> dict[str, Any]:
    """`case` as an Adagrad step: its fields "optimizer", the hyperparameters, and with
    `state` a random sum of squares before the step, else fresh state."""
    out = {**case, "optimizer": "adagrad", "eps": F32(eps), "eps_root": F32(eps_root),
           "initial_accumulator_value": F32(initial_accumulator_value),
           "weight_decay": F32(weight_decay), "decay": decay}
    if state:
        rng = np.random.default_rng(seed)
        for name in ("kernel", "bias"):
            out["second_moment_" + name] = np.square(rng.standard_normal(case[name].shape)).astype(F32)
    return out


WORKED = make_case(2, 1, 1, lr=0.1, kernel=[[1]], bias=[0], x=[[1], [2]], y=[[0], [0]])


def enc(values: Any) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype="<f4").tobytes()).decode()


def dec(text: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(text), dtype="<f4")


def step_message(case: dict[str, Any], mid: Any, binary: bool = False,
                 **extra: Any) -> tuple[dict[str, Any], bytes]:
    """A step message for `case`: (line object, payload bytes; empty for base64)."""
    msg: dict[str, Any] = {"op": "step", "id": mid,
                           **{key: case[key] for key in ("n", "d", "k", "num_shards", "step")}}
    payload = b""
    if "optimizer" in case:
        msg.update({key: case[key] for key in ("optimizer", "nesterov", "decay") if key in case})
    for key in INPUTS + HYPERPARAMETERS + BUFFERS + SECOND_MOMENTS:
        if key not in case or (key in HYPERPARAMETERS and "optimizer" not in case):
            continue
        raw = np.ascontiguousarray(case[key], dtype="<f4").tobytes()
        if binary:
            msg[key] = {"offset": len(payload), "count": len(raw) // 4}
            payload += raw
        else:
            msg[key] = base64.b64encode(raw).decode()
    if binary:
        msg["payload"] = len(payload)
    msg.update(extra)
    return msg, payload


def numpy_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """A correct float32 step (the README's minimal adapter)."""
    with np.errstate(all="ignore"):  # the suite's special values overflow on purpose
        r = case.x @ case.kernel + case.bias - case.y
        count = F32(case.n * case.k)
        gk = F32(2) * (case.x.T @ r) / count
        gb = F32(2) * r.sum(axis=0) / count
        return {"loss": np.sum(r * r) / count,
                "kernel": case.kernel - case.lr * gk, "bias": case.bias - case.lr * gb,
                "grad_kernel": gk, "grad_bias": gb, "step": case.step + 1}


def momentum_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """A correct float32 step, plain or with momentum (every option), elementwise."""
    out = numpy_step(case)
    o = case.optimizer
    if o is None:
        return out

    def update(p: Any, g: Any, buf: Any) -> tuple[Any, Any]:
        ge = g + o.weight_decay * p if o.decay == "coupled" else g
        # A fresh buffer, and any at momentum 0 (nothing to dampen), is ge itself.
        fresh = buf is None or o.momentum == 0
        b = ge if fresh else o.momentum * buf + (F32(1) - o.dampening) * ge
        direction = ge + o.momentum * b if o.nesterov else b
        if o.decay == "decoupled":
            direction = direction + o.weight_decay * p
        return p - case.lr * direction, b

    with np.errstate(all="ignore"):
        out["kernel"], out["momentum_kernel"] = update(case.kernel, out["grad_kernel"],
                                                       case.momentum_kernel)
        out["bias"], out["momentum_bias"] = update(case.bias, out["grad_bias"], case.momentum_bias)
    return out


def adam_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """A correct float32 step, plain or Adam (every option), elementwise; the bias
    corrections 1 - b**t in float64, then rounded to float32."""
    o = case.optimizer
    if not isinstance(o, sgdc_adapter.AdamOptimizer):
        return momentum_step(case)
    out = numpy_step(case)
    t = case.step + 1
    correction1, correction2 = (F32(1 - float(b) ** t) for b in (o.b1, o.b2))

    def update(p: Any, g: Any, m: Any, v: Any) -> tuple[Any, Any, Any]:
        ge = g + o.weight_decay * p if o.decay == "coupled" else g
        m = ge * (F32(1) - o.b1) if m is None else o.b1 * m + (F32(1) - o.b1) * ge
        v = ge * ge * (F32(1) - o.b2) if v is None else o.b2 * v + (F32(1) - o.b2) * (ge * ge)
        a = (m / correction1) / (np.sqrt(v / correction2 + o.eps_root) + o.eps)
        if o.decay == "decoupled":
            a = a + o.weight_decay * p
        return p - case.lr * a, m, v

    with np.errstate(all="ignore"):
        out["kernel"], out["momentum_kernel"], out["second_moment_kernel"] = update(
            case.kernel, out["grad_kernel"], case.momentum_kernel, case.second_moment_kernel)
        out["bias"], out["momentum_bias"], out["second_moment_bias"] = update(
            case.bias, out["grad_bias"], case.momentum_bias, case.second_moment_bias)
    return out


def adagrad_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """A correct float32 step, plain or Adagrad (either eps, both decays), elementwise."""
    o = case.optimizer
    if not isinstance(o, sgdc_adapter.AdagradOptimizer):
        return momentum_step(case)
    out = numpy_step(case)

    def update(p: Any, g: Any, s: Any) -> tuple[Any, Any]:
        ge = g + o.weight_decay * p if o.decay == "coupled" else g
        s = (np.full_like(p, o.initial_accumulator_value) if s is None else s) + ge * ge
        a = ge / (np.sqrt(s + o.eps_root) + o.eps)
        if o.decay == "decoupled":
            a = a + o.weight_decay * p
        return p - case.lr * a, s

    with np.errstate(all="ignore"):
        out["kernel"], out["second_moment_kernel"] = update(case.kernel, out["grad_kernel"],
                                                            case.second_moment_kernel)
        out["bias"], out["second_moment_bias"] = update(case.bias, out["grad_bias"],
                                                        case.second_moment_bias)
    return out


class SuiteSide:
    """The suite's side of one conversation, over two file descriptors. Every read has a
    deadline: a missing answer fails the test instead of hanging it."""

    def __init__(self, to_adapter: int, from_adapter: int) -> None:
        self._to_adapter, self._from_adapter = to_adapter, from_adapter
        self.answer_timeout = ANSWER_TIMEOUT
        self.buffer = b""
        self.binary = False

    def write(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._to_adapter, view):]

    def send(self, msg: dict[str, Any] | str, payload: bytes = b"") -> None:
        line = msg if isinstance(msg, str) else json.dumps(msg)
        self.write(line.encode() + b"\n" + payload)

    def _fill(self, deadline: float) -> None:
        ready, _, _ = select.select([self._from_adapter], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            raise AssertionError(f"no answer within {self.answer_timeout} s")
        data = os.read(self._from_adapter, 1 << 16)
        if not data:
            raise EOFError("the kit closed its output")
        self.buffer += data

    def recv(self) -> dict[str, Any]:
        """The next answer; with binary arrays, its arrays are read from its payload."""
        deadline = time.monotonic() + self.answer_timeout
        while b"\n" not in self.buffer:
            self._fill(deadline)
        line, self.buffer = self.buffer.split(b"\n", 1)
        reply: dict[str, Any] = json.loads(line)
        size = reply.get("payload", 0)
        while len(self.buffer) < size:
            self._fill(deadline)
        raw, self.buffer = self.buffer[:size], self.buffer[size:]
        for key in ARRAYS + BUFFERS + SECOND_MOMENTS:
            if key in reply:
                if size:
                    ref = reply[key]
                    reply[key] = np.frombuffer(raw, "<f4", ref["count"], ref["offset"])
                else:
                    reply[key] = dec(reply[key])
        return reply

    def silent(self, seconds: float = 0.2) -> bool:
        """Whether no answer arrives within `seconds`."""
        if self.buffer:
            return False
        ready, _, _ = select.select([self._from_adapter], [], [], seconds)
        return not ready

    def hello(self, binary: bool = False) -> dict[str, Any]:
        msg: dict[str, Any] = {"op": "hello", "protocol": 1}
        if binary:
            msg["array_encodings"] = ["base64", "binary"]
        self.send(msg)
        reply = self.recv()
        self.binary = reply.get("array_encoding") == "binary"
        return reply

    def send_case(self, case: dict[str, Any], mid: Any, **extra: Any) -> None:
        self.send(*step_message(case, mid, self.binary, **extra))

    def step(self, case: dict[str, Any], mid: Any = 1, **extra: Any) -> dict[str, Any]:
        self.send_case(case, mid, **extra)
        reply = self.recv()
        assert reply["id"] == mid, reply
        return reply

    def close_input(self) -> None:
        if self._to_adapter >= 0:
            os.close(self._to_adapter)
            self._to_adapter = -1


class FakeSuite(SuiteSide):
    """A conversation with `sgdc_adapter.serve_streams`, served in a thread over pipes."""

    def __init__(self, step: Callable[..., Any] | None = None, **declarations: Any) -> None:
        declarations.setdefault("name", "fake")
        declarations.setdefault("version", "0")
        to_adapter, to_write = os.pipe()
        from_read, from_adapter = os.pipe()
        super().__init__(to_write, from_read)
        reader, writer = os.fdopen(to_adapter, "rb"), os.fdopen(from_adapter, "wb")
        self.error: BaseException | None = None

        def serve() -> None:
            try:
                sgdc_adapter.serve_streams(reader, writer, step, **declarations)
            except BaseException as e:  # noqa: BLE001 - inspected by the tests
                self.error = e
            finally:
                reader.close()
                writer.close()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def end(self, timeout: float = 10.0) -> None:
        """Close the kit's input and wait for the conversation to end."""
        self.close_input()
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the conversation did not end at the end of input"

    def close(self) -> None:
        self.end()
        os.close(self._from_adapter)


class AdapterProcess(SuiteSide):
    """An adapter program, started and spoken to as the suite does (stderr kept in a file)."""

    def __init__(self, command: list[str], binary: bool = False) -> None:
        self.log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        super().__init__(self.proc.stdin.fileno(), self.proc.stdout.fileno())
        self.answer_timeout = 120.0  # a framework's import and first compilation, on a busy machine
        self.info = self.hello(binary)
        self.next_id = 0

    def stderr(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")

    def result(self, case: dict[str, Any]) -> dict[str, Any]:
        """The case's result; fails the test on any other answer."""
        self.next_id += 1
        try:
            reply = self.step(case, self.next_id)
        except (AssertionError, EOFError) as e:
            raise AssertionError(f"{e}; adapter stderr:\n{self.stderr()}") from None
        assert reply["op"] == "result", reply
        return reply

    def close(self, timeout: float = 60.0) -> int:
        """Send bye, close the input, and return the exit status."""
        try:
            self.send({"op": "bye"})
        except OSError:
            pass
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            assert self.proc.stdout is not None
            self.proc.stdout.close()
            self.log.close()
