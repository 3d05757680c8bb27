"""Relay: this process's stdin and stdout, joined to a Unix socket.

    python -m sgdc_adapter.relay SOCKET [--connect-timeout SECONDS] [--linger SECONDS]

The suite starts this as its adapter command; the other end of SOCKET is an adapter
served in another process (the `sgdc` pytest fixture's), so the step runs there. Bytes
are copied both ways unchanged. The relay ends when either side closes: at the end of
its stdin it closes the socket's sending side and waits at most `--linger` seconds for
the server to finish; when the server closes, or stdout is closed, it exits at once.
Exit status: 0, or 2 when the socket cannot be reached (named in the message).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import threading

CHUNK = 1 << 16


def _stdin_to_socket(sock: socket.socket, done: threading.Event, either: threading.Event) -> None:
    try:
        while True:
            data = os.read(0, CHUNK)
            if not data:
                break
            sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)  # the server reads the end of input
    except OSError:
        pass  # the server has gone: the other direction ends the relay
    finally:
        done.set()
        either.set()


def _socket_to_stdout(sock: socket.socket, done: threading.Event, either: threading.Event) -> None:
    try:
        while True:
            data = sock.recv(CHUNK)
            if not data:
                break
            view = memoryview(data)
            while view:
                view = view[os.write(1, view):]
    except OSError:
        pass  # the suite closed stdout, or the connection broke
    finally:
        done.set()
        either.set()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sgdc_adapter.relay",
                                     description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("socket", help="path of the Unix socket the adapter is served on")
    parser.add_argument("--connect-timeout", type=float, default=10.0, metavar="SECONDS")
    parser.add_argument("--linger", type=float, default=30.0, metavar="SECONDS",
                        help="how long to wait for the server after stdin ends")
    args = parser.parse_args(argv)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(args.connect_timeout)
    try:
        sock.connect(args.socket)
    except OSError as e:
        print(f"sgdc relay: cannot connect to the adapter's socket {args.socket} ({e}); "
              f"it is served only while the test that started the suite runs", file=sys.stderr)
        return 2
    sock.settimeout(None)
    up_done, down_done, either = threading.Event(), threading.Event(), threading.Event()
    threading.Thread(target=_stdin_to_socket, args=(sock, up_done, either), daemon=True).start()
    threading.Thread(target=_socket_to_stdout, args=(sock, down_done, either), daemon=True).start()
    either.wait()
    if not down_done.is_set():  # stdin ended: the server answers what it has, then closes
        down_done.wait(args.linger)
    sock.close()
    return 0


if __name__ == "__main__":
    # The copying threads may still block in a read: leave without waiting for them.
    sys.stdout.flush()
    os._exit(main())
