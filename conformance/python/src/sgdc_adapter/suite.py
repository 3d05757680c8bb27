"""Run the suite's CLI against an adapter served by this process (what the `sgdc` pytest
fixture does, without pytest).

The CLI is started with `--impl` set to a relay (`python -m sgdc_adapter.relay SOCKET`)
that joins its adapter stdio to a Unix socket; this process serves the adapter on that
socket in a thread, with the same protocol code as `serve`, so the step can be any
callable of this process (a closure, an in-memory model). Nothing here touches stdout.
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._codec import Case, StepOutput
from ._serve import Adapter, BatchOutput

CLI_ENV = "SGDC_CLI"
CLI_NAME = "sgd-conformance"
VERDICTS = {0: "conformant", 1: "not_conformant", 2: "could_not_test", 77: "skipped"}


class CliNotFound(Exception):
    """The suite's CLI is not where $SGDC_CLI says (`configured` True), or not on PATH;
    the message says how to point at it."""

    def __init__(self, message: str, configured: bool) -> None:
        super().__init__(message)
        self.configured = configured


def find_cli() -> str:
    """The suite's CLI: $SGDC_CLI, else `sgd-conformance` on PATH; CliNotFound otherwise."""
    named = os.environ.get(CLI_ENV)
    if named:
        if os.path.isfile(named) and os.access(named, os.X_OK):
            return named
        raise CliNotFound(f"{CLI_ENV}={named} is not an executable file; point {CLI_ENV} at "
                          f"the built suite (e.g. build/bin/{CLI_NAME})", configured=True)
    found = shutil.which(CLI_NAME)
    if found is None:
        raise CliNotFound(f"the sgd-conformance CLI was not found: set {CLI_ENV}=/path/to/"
                          f"{CLI_NAME} (e.g. build/bin/{CLI_NAME} of a build of the suite) "
                          f"or put {CLI_NAME} on PATH", configured=False)
    return found


@dataclass
class SuiteResult:
    """One run of the suite: `verdict` is "conformant", "not_conformant", "could_not_test",
    "skipped", "timed_out" or "exit N"; `report` the JSON report (None when the CLI wrote
    none); `text` the CLI's text report (stdout); `stderr` its diagnostics and the
    adapter's; `server_errors` what went wrong on this process's side of the socket."""

    verdict: str
    exit_code: int | None
    report: dict[str, Any] | None
    text: str
    stderr: str
    command: list[str]
    server_errors: list[str] = field(default_factory=list)

    @property
    def conformant(self) -> bool:
        return self.verdict == "conformant"

    def replays(self) -> list[dict[str, Any]]:
        """For each failed property's replay line: its seed, property and case, as
        keywords of `run_suite` / `sgdc.check`."""
        out = []
        for line in self.text.splitlines():
            if not line.strip().startswith("replay:"):
                continue
            words = shlex.split(line.split("replay:", 1)[1])
            args = dict(zip(words, words[1:]))
            replay: dict[str, Any] = {}
            if "--seed" in args:
                replay["seed"] = int(args["--seed"])
            if "--property" in args:
                replay["properties"] = (args["--property"],)
            if "--case" in args:
                replay["case"] = int(args["--case"])
            out.append(replay)
        return out


def _serialized(adapter: Adapter) -> Adapter:
    """A copy of `adapter` whose step runs under one lock: conversations that the suite
    might hold at once never run the step concurrently."""
    lock = threading.Lock()
    locked = copy.copy(adapter)
    step, step_batch = adapter.step, adapter.step_batch
    if step is not None:
        def locked_step(case: Case) -> StepOutput:
            with lock:
                return step(case)
        locked.step = locked_step
    if step_batch is not None:
        def locked_batch(cases: list[Case]) -> Sequence[BatchOutput]:
            with lock:
                return step_batch(cases)
        locked.step_batch = locked_batch
    return locked


class _SocketServer:
    """Serves `adapter` on a fresh Unix socket, one thread per connection, until closed."""

    def __init__(self, adapter: Adapter) -> None:
        self.adapter = _serialized(adapter)
        base = tempfile.gettempdir()
        if len(base) > 80:  # a Unix socket's path is limited to about 108 bytes
            base = "/tmp"
        self.dir = tempfile.mkdtemp(prefix="sgdc-", dir=base)
        self.path = os.path.join(self.dir, "adapter.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(4)
        self.listener.settimeout(0.1)
        self.closing = threading.Event()
        self.connections: list[socket.socket] = []
        self.threads: list[threading.Thread] = []
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.acceptor = threading.Thread(target=self._accept, name="sgdc-accept", daemon=True)
        self.acceptor.start()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return  # the listener was closed
            conn.settimeout(None)
            with self.lock:
                self.connections.append(conn)
            t = threading.Thread(target=self._serve, args=(conn,), name="sgdc-conversation",
                                 daemon=True)
            self.threads.append(t)
            t.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            with conn.makefile("rb") as reader, conn.makefile("wb") as writer:
                self.adapter.serve_streams(reader, writer)
        except Exception as e:  # noqa: BLE001 - reported with the suite's result
            if not self.closing.is_set():
                self.errors.append(f"{type(e).__name__}: {e}")
        finally:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            conn.close()

    def close(self, wait: float = 2.0) -> None:
        """Stop accepting, end every conversation, wait up to `wait` seconds for them (a
        step still running is left to finish in its daemon thread)."""
        self.closing.set()
        self.listener.close()
        with self.lock:
            for conn in self.connections:
                try:
                    conn.shutdown(socket.SHUT_RDWR)  # a conversation waiting on input ends
                except OSError:
                    pass
        self.acceptor.join(wait)
        for t in self.threads:
            t.join(wait)
        shutil.rmtree(self.dir, ignore_errors=True)


def run_suite(adapter: Adapter, *, cli: str | None = None, cases: int | None = None,
              seed: int | None = None, properties: Sequence[str] = (), case: int | None = None,
              case_timeout: float | None = None, extra_args: Sequence[str] = (),
              timeout: float = 600.0) -> SuiteResult:
    """Run `sgd-conformance run` against `adapter`, served by this process.

    `cli`: the CLI's path (default `find_cli()`, which raises CliNotFound); `cases`,
    `seed`, `properties`, `case`, `case_timeout`: the CLI's --cases, --seed, --property
    (repeated), --case, --timeout; `extra_args`: more CLI arguments; `timeout`: seconds
    for the whole run, after which the CLI and its relay are killed (verdict
    "timed_out")."""
    cli = cli or find_cli()
    server = _SocketServer(adapter)
    try:
        report_path = os.path.join(server.dir, "report.json")
        impl = shlex.join([sys.executable, "-m", "sgdc_adapter.relay", server.path])
        command = [cli, "run", "--impl", impl, "--json", report_path]
        if cases is not None:
            command += ["--cases", str(cases)]
        if seed is not None:
            command += ["--seed", str(seed)]
        for p in properties:
            command += ["--property", str(p)]
        if case is not None:
            command += ["--case", str(case)]
        if case_timeout is not None:
            command += ["--timeout", str(case_timeout)]
        command += [str(a) for a in extra_args]
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            code: int | None = proc.returncode
            verdict = VERDICTS.get(proc.returncode, f"exit {proc.returncode}")
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # the CLI and the relay it started
            except ProcessLookupError:
                pass
            out, err = proc.communicate(timeout=10)
            code, verdict = None, "timed_out"
        report = None
        if os.path.exists(report_path):
            try:
                with open(report_path, encoding="utf-8") as f:
                    report = json.load(f)
            except ValueError:
                report = None
        text, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    finally:
        server.close()
    return SuiteResult(verdict=verdict, exit_code=code, report=report, text=text, stderr=stderr,
                       command=command, server_errors=list(server.errors))


def replay_hint(result: SuiteResult) -> str:
    """How to replay the failed cases from Python: the replay lines' --impl is a relay
    that exists only while its run lasts."""
    hints = []
    for r in result.replays():
        args = ", ".join(f"{k}={v!r}" for k, v in r.items())
        hints.append(f"  sgdc.check(<step>, <declarations>, {args})")
    if not hints:
        return ""
    return ("The replay lines' --impl is a relay to the test process, gone after the test; "
            "replay a case in the test with:\n" + "\n".join(dict.fromkeys(hints)))


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def plain_text(text: str) -> str:
    """The CLI's text report without colour codes."""
    return _ANSI.sub("", text)


def failure_message(result: SuiteResult, what: str) -> str:
    """The text a failing test shows: the verdict, the report, the hints."""
    parts = [f"sgd-conformance: {what} is {result.verdict.replace('_', ' ').upper()}"
             if result.verdict in ("conformant", "not_conformant") else
             f"sgd-conformance could not test {what} ({result.verdict})"]
    if result.text.strip():
        parts.append(plain_text(result.text.rstrip()))
    if result.verdict != "not_conformant" and result.stderr.strip():
        parts.append("stderr:\n" + result.stderr.rstrip())
    if result.server_errors:
        parts.append("adapter server: " + "; ".join(result.server_errors))
    hint = replay_hint(result)
    if hint:
        parts.append(hint)
    parts.append("command: " + shlex.join(result.command))
    return "\n\n".join(parts)
