#!/usr/bin/env python3
"""The machine's floor for any round trip between two processes: one byte there and
back through two pipes, with the processes on different CPUs and on the same CPU.

    python3 bench/pipe_pingpong.py [ROUND_TRIPS]       default 5000

Each round trip wakes a sleeping process twice; on a virtual machine a wake-up across
CPUs costs an inter-processor interrupt through the hypervisor. Prints microseconds per
round trip (mean).
"""

from __future__ import annotations

import os
import sys
import time


def ping_pong(count: int, parent_cpu: int, child_cpu: int) -> float:
    to_child, to_parent = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        os.sched_setaffinity(0, {child_cpu})
        for _ in range(count + 1):
            os.read(to_child[0], 1)
            os.write(to_parent[1], b"x")
        os._exit(0)
    os.sched_setaffinity(0, {parent_cpu})
    os.write(to_child[1], b"x")  # warm-up
    os.read(to_parent[0], 1)
    start = time.perf_counter()
    for _ in range(count):
        os.write(to_child[1], b"x")
        os.read(to_parent[0], 1)
    elapsed = time.perf_counter() - start
    os.waitpid(pid, 0)
    return elapsed / count * 1e6


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) > 1:
        print(f"different CPUs ({cpus[0]}, {cpus[1]}): {ping_pong(count, cpus[0], cpus[1]):.1f} us per round trip")
    print(f"same CPU ({cpus[0]}): {ping_pong(count, cpus[0], cpus[0]):.1f} us per round trip")


if __name__ == "__main__":
    main()
