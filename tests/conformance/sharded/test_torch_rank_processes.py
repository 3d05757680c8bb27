"""The adapters with gloo rank processes (torch_distributed_step.py, torch_fsdp2_step.py)
leave no process behind, however they end: at end of input, on SIGTERM, and when
killed outright; and neither adapter's serving process loads torch.

    conformance/python/run-adapter tests/conformance/sharded/test_torch_rank_processes.py

Exits 77 (skipped) when torch is not installed in the interpreter that runs it; the
FSDP2 adapter's tests are skipped with a torch older than 2.13.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTERS = os.path.join(HERE, "..", "..", "..", "conformance", "python", "adapters")
# Whether the tests can run, from torch's metadata: importing torch here would cost
# seconds of CPU that only the adapters need.
if importlib.util.find_spec("torch") is None:
    print("skipped: torch is not installed", file=sys.stderr)
    sys.exit(77)
TORCH_VERSION = importlib.metadata.version("torch")
TORCH = tuple(int(p) for p in TORCH_VERSION.split("+")[0].split(".")[:2])

# The worked example of docs/spec/step.md, with num_shards = 2.
CASE = {"op": "step", "id": 1, "n": 2, "d": 1, "k": 1, "num_shards": 2, "step": 0,
        "lr": "zczMPQ==", "kernel": "AACAPw==", "bias": "AAAAAA==", "x": "AACAPwAAAEA=",
        "y": "AAAAAAAAAAA="}


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class DistributedProcesses(unittest.TestCase):
    adapter = "torch_distributed_step.py"

    def start(self) -> tuple[subprocess.Popen[str], list[int]]:
        # A temporary directory of the test's own for the adapter's: what a killed
        # adapter leaves there (its forkserver's socket) goes with it.
        tmp = tempfile.TemporaryDirectory(prefix="sgdc-ranks-")
        self.addCleanup(tmp.cleanup)
        p = subprocess.Popen([sys.executable, os.path.join(ADAPTERS, self.adapter)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, TMPDIR=tmp.name))
        p.stdin.write('{"op":"hello","protocol":1}\n' + json.dumps(CASE) + "\n")
        p.stdin.flush()
        hello, result = json.loads(p.stdout.readline()), json.loads(p.stdout.readline())
        self.assertEqual(hello["max_shards"], 8)
        self.assertEqual(result["op"], "result", result)
        self.assertEqual(result["kernel"], "AAAAPw==")  # W' = 0.5, as in the spec
        workers = descendants(p.pid)
        self.assertGreaterEqual(len(workers), 8)  # the 8 ranks and the forkserver
        # The serving process (the coordinator) does without torch, leaving its seconds
        # of CPU per start to the forkserver that forks the ranks.
        with open(f"/proc/{p.pid}/maps") as f:
            loaded = sorted({line.split()[-1] for line in f if "libtorch" in line})
        self.assertEqual(loaded, [], "the coordinator loaded torch")
        return p, workers

    def assert_gone(self, workers: list[int]) -> None:
        deadline = time.time() + 20
        while time.time() < deadline and any(alive(w) for w in workers):
            time.sleep(0.2)
        self.assertEqual([w for w in workers if alive(w)], [], "worker processes survived")

    def test_end_of_input(self) -> None:
        p, workers = self.start()
        p.stdin.close()
        self.assertEqual(p.wait(timeout=30), 0)
        self.assert_gone(workers)

    def test_sigterm(self) -> None:
        p, workers = self.start()
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=30)
        self.assert_gone(workers)

    def test_sigkill(self) -> None:
        p, workers = self.start()
        p.kill()
        p.wait(timeout=30)
        self.assert_gone(workers)


@unittest.skipIf(TORCH < (2, 13), f"torch {TORCH_VERSION} is older than 2.13 (FSDP2 on CPU)")
class Fsdp2Processes(DistributedProcesses):
    adapter = "torch_fsdp2_step.py"


if __name__ == "__main__":
    unittest.main()
