"""The rank world of the FSDP2 harness: `world` gloo rank processes on 127.0.0.1, started
once and reused for every case, stopped with the process that started them.

Torch-free on the coordinator's side (none of the harness's modules that it imports
imports torch): the ranks are forked by multiprocessing's forkserver, which imports
torch (and the main module, where the user's functions live) once, so the world is up
in seconds rather than the half minute of starting `world` fresh interpreters. TCP
rendezvous on a free loopback port, GLOO_SOCKET_IFNAME=lo.

Every rank dies with the coordinator: `stop()` at exit (the harness registers it), and
PR_SET_PDEATHSIG in each rank: the kernel kills a rank when its parent, the
forkserver, goes, and the forkserver exits when the coordinator does, however it ends.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import socket
import time
from collections.abc import Callable, Sequence
from multiprocessing.connection import Connection, wait
from typing import Any

STARTUP_TIMEOUT_S = 120.0
ANSWER_TIMEOUT_S = 45.0  # below the suite's default case timeout (60 s)


class RankFailure(RuntimeError):
    """A rank raised, died or did not answer: the case's error. The world has been
    stopped (a failed collective leaves the process groups unusable); the next case
    starts it again."""


class RankRejected(ValueError):
    """The ranks answered, but refused the case: the world is still usable. `permanent`:
    a rank said the refusal holds for every such case (its model cannot be built)."""

    def __init__(self, message: str, permanent: bool) -> None:
        super().__init__(message)
        self.permanent = permanent


def die_with_parent() -> None:
    """Linux: the kernel kills this rank when its parent (the forkserver) goes."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() == 1:  # the parent went before the request took effect
        os._exit(1)


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RankWorld:
    """`world` rank processes running `target(rank, world, port, conn, *args)`.

    A rank answers each message of the coordinator with one message of its own: at
    start ("ready", None) or ("error", text); per job ("ok", value), ("rejected", (text
    or None, permanent): the case is refused, the rank goes on) or ("error", text: it
    stops)."""

    def __init__(self, world: int, target: Callable[..., None], args: Sequence[Any] = (),
                 preload: Sequence[str] = ()) -> None:
        self.world, self.target, self.args, self.preload = world, target, tuple(args), preload
        self.procs: list[Any] = []
        self.conns: list[Connection] = []
        self.ready = False

    def start(self) -> None:
        """Forks the ranks and returns; they join the world in the background (the next
        `run` waits for them)."""
        if self.procs:
            return
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(self.preload))
        port = _free_loopback_port()
        for rank in range(self.world):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=self.target, args=(rank, self.world, port, child, *self.args),
                            daemon=True, name=f"fsdp2-rank-{rank}")
            p.start()
            child.close()
            self.procs.append(p)
            self.conns.append(parent)

    def _died(self, rank: int, phase: str) -> str:
        self.procs[rank].join(timeout=1)
        return f"rank {rank} died ({phase}; exit code {self.procs[rank].exitcode})"

    def _collect(self, count: int, timeout: float, phase: str) -> list[tuple[str, Any]]:
        """The next message of ranks 0..count-1; RankFailure naming the first that
        fails, dies or stays silent."""
        deadline = time.monotonic() + timeout
        answers: dict[int, tuple[str, Any]] = {}
        while len(answers) < count:
            waiting = [r for r in range(count) if r not in answers]
            left = deadline - time.monotonic()
            if left <= 0:
                raise RankFailure(f"rank{'s' if len(waiting) > 1 else ''} "
                                  f"{', '.join(map(str, waiting))} gave no answer within "
                                  f"{timeout:g} s ({phase})")
            wait([self.conns[r] for r in waiting] + [self.procs[r].sentinel for r in waiting], left)
            for r in waiting:
                if self.conns[r].poll():
                    try:
                        kind, value = self.conns[r].recv()
                    except (EOFError, OSError):
                        kind, value = "error", None
                    if kind == "error":
                        raise RankFailure(value or self._died(r, phase))
                    answers[r] = kind, value
                elif not self.procs[r].is_alive():
                    raise RankFailure(self._died(r, phase))
        return [answers[r] for r in range(count)]

    def run(self, job: Any, ranks: int, timeout: float = ANSWER_TIMEOUT_S) -> list[Any]:
        """Sends `job` to ranks 0..ranks-1 and returns their values in rank order.
        RankRejected (world kept) when any refused it; on any other failure the world
        is stopped, RankFailure raised, and the next call starts it again."""
        try:
            self.start()
            if not self.ready:
                self._collect(self.world, STARTUP_TIMEOUT_S, "starting")
                self.ready = True
            for rank in range(ranks):
                try:
                    self.conns[rank].send(job)
                except OSError:
                    raise RankFailure(self._died(rank, "before the case")) from None
            answers = self._collect(ranks, timeout, "during the case")
        except BaseException:
            self.stop()
            raise
        refusals = [value for kind, value in answers if kind == "rejected"]
        if refusals:
            raise RankRejected(next((text for text, _ in refusals if text),
                                    "the ranks refused the case"),
                               any(permanent for _, permanent in refusals))
        return [value for _, value in answers]

    def stop(self) -> None:
        """Stops every rank: asks, waits briefly, then kills."""
        for conn in self.conns:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 5
        for p in self.procs:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in self.procs:
            if p.is_alive():
                p.kill()
                p.join(timeout=5)
        for conn in self.conns:
            conn.close()
        self.procs, self.conns, self.ready = [], [], False
