"""The relay (`python -m sgdc_adapter.relay SOCKET`) copies bytes both ways and ends when
either side closes, never hanging."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator

import pytest

TIMEOUT = 30


@pytest.fixture
def server() -> Iterator[Callable[[Callable[[socket.socket], None]], str]]:
    """Serves one connection on a fresh Unix socket with the given handler; returns its path."""
    tmp = tempfile.TemporaryDirectory(prefix="sgdc-relay-")
    listeners: list[socket.socket] = []

    def start(handler: Callable[[socket.socket], None]) -> str:
        path = os.path.join(tmp.name, f"s{len(listeners)}")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(1)
        listeners.append(listener)

        def accept() -> None:
            conn, _ = listener.accept()
            with conn:
                handler(conn)

        threading.Thread(target=accept, daemon=True).start()
        return path

    yield start
    for listener in listeners:
        listener.close()
    tmp.cleanup()


def relay(path: str, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "sgdc_adapter.relay", path, *args],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def upper_until_eof(conn: socket.socket) -> None:
    while data := conn.recv(4096):
        conn.sendall(data.upper())


def test_copies_both_ways_and_ends_at_the_end_of_stdin(server: Callable[..., str]) -> None:
    p = relay(server(upper_until_eof))
    out, err = p.communicate(b"hello\n" + b"x" * 200_000, timeout=TIMEOUT)
    assert p.returncode == 0, err
    assert out == b"HELLO\n" + b"X" * 200_000


def test_ends_when_the_server_closes_though_stdin_stays_open(server: Callable[..., str]) -> None:
    p = relay(server(lambda conn: conn.sendall(b"bye\n")))
    assert p.wait(timeout=TIMEOUT) == 0
    assert p.stdout is not None and p.stdout.read() == b"bye\n"
    assert p.stdin is not None
    p.stdin.close()


def test_waits_for_a_silent_server_no_longer_than_linger(server: Callable[..., str]) -> None:
    p = relay(server(lambda conn: time.sleep(TIMEOUT)), "--linger", "0.5")
    start = time.monotonic()
    p.communicate(b"", timeout=TIMEOUT)
    assert p.returncode == 0 and time.monotonic() - start < 10


def test_a_missing_socket_is_named_and_exits_2() -> None:
    p = relay("/nonexistent/sgdc.sock")
    _, err = p.communicate(timeout=TIMEOUT)
    assert p.returncode == 2
    assert b"cannot connect to the adapter's socket /nonexistent/sgdc.sock" in err
