#!/usr/bin/env python3
"""The step sharded ZeRO-3 / FSDP style over torch.distributed (gloo) worker processes.

    conformance/python/run-adapter conformance/python/adapters/torch_distributed_step.py [--mutant NAME]

A custom engine: this adapter is the example of a sharded step written by hand, with
explicit collectives, so that every step of the algorithm is visible and any engine
of one's own can be tested the same way. PyTorch's own FSDP2 (`fully_shard`) is tested
by torch_fsdp2_step.py.

Processes: this process speaks the protocol and coordinates, without torch (NumPy
alone: it splits the case and puts the answers together); it starts MAX_SHARDS (8)
gloo worker processes on 127.0.0.1 only (TCP rendezvous on a free loopback port,
GLOO_SOCKET_IFNAME=lo), forked by a forkserver that has imported torch (seconds, where
a fresh interpreter per worker took half a minute on two cores; the workers import this
file, and only they import torch, once, in the forkserver): one world of 8 ranks,
and one process group per shard count S = 1..8 made of ranks 0..S-1. A case with
num_shards = S runs on that group; the other ranks wait. The groups live as long as
the adapter, so a change of S costs nothing (re-creating a world for every change would
cost seconds of process start). A larger S is rejected, and the hello reply says so
(max_shards = 8).

Per case, rank i of S receives only its part of the parameters and its rows of the
batch: the flattened (D + 1) * K parameter vector (kernel row-major, then bias) and
the N rows are both split as numpy.array_split does (the first parts one longer). The
rank then, with real collectives:
  1. all_gather(parameter shards) -> the whole kernel and bias (a temporary copy);
  2. autograd on its rows of loss_part = sum(r*r) / (N*K), r = x_i @ W + b - y_i;
  3. all_reduce(SUM) of loss_part and of the flat gradient (an all-reduce rather than a
     reduce_scatter, which older gloo builds lack), keeping only its own slice of the
     gradient;
  4. torch.optim.SGD(lr) steps its own shard (an nn.Parameter of its slice) only,
     and drops the gathered copy.
The coordinator reports the shards concatenated, and the layout each rank reports from
the tensor it keeps (how many kernel and bias elements it holds).

The algorithm is FSDP's (FULL_SHARD) with an all-reduce for the scatter. Tested with
torch 2.13.0 (CPU); the code also runs on torch 1.13.

Process hygiene: every worker dies with this process (atexit, SIGTERM/SIGINT handlers,
end of input; and PR_SET_PDEATHSIG: the kernel kills a worker when its parent, the
forkserver, goes, which exits with this process however it ends); collectives and
waits on workers have timeouts (COLLECTIVE_TIMEOUT_S): a hung or dead worker answers
the case with op "error" and the workers are restarted.

Subnormals: PyTorch on the CPU and gloo's sums keep IEEE subnormals: "ieee".

Mutants (--mutant, each a sharding bug the suite must reject):
  no_average           each rank differentiates its own mean loss, sum(r*r)/(n_i*K), and
                       the all-reduce SUMs those gradients without dividing by S
  drop_remainder_rows  each rank takes N // S rows; the N % S remainder rows are lost
  full_replica         every rank keeps and updates the whole parameter vector (no
                       sharding of the state) and reports so: a placement violation
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import importlib.metadata
import multiprocessing
import os
import signal
import socket
import sys
from multiprocessing.connection import Connection
from typing import Any

import sgdc_adapter

np, = sgdc_adapter.require("numpy")
if __name__ != "__main__":  # only the workers (which import this file) run torch
    import torch
    import torch.distributed as dist

MAX_SHARDS = 8
COLLECTIVE_TIMEOUT_S = 60
STARTUP_TIMEOUT_S = 180
MUTANTS = ("no_average", "drop_remainder_rows", "full_replica")
F32 = np.float32


def split_bounds(total: int, parts: int) -> list[tuple[int, int]]:
    """[begin, end) of each part of numpy.array_split(range(total), parts)."""
    q, r = divmod(total, parts)
    bounds, start = [], 0
    for s in range(parts):
        end = start + q + (1 if s < r else 0)
        bounds.append((start, end))
        start = end
    return bounds


# ---- worker side --------------------------------------------------------------------


def _die_with_parent() -> None:
    """Linux: the kernel kills this worker when its parent (the forkserver, which exits
    with the coordinator) dies, however it dies."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() == 1:  # the parent went before the request took effect
        os._exit(1)


def _worker_step(rank: int, groups: dict[int, Any], job: dict[str, Any]) -> dict[str, Any]:
    n, d, k, shards, lr, mutant = (job[key] for key in ("n", "d", "k", "shards", "lr", "mutant"))
    group = groups[shards]
    values, dk = (d + 1) * k, d * k
    bounds = split_bounds(values, shards)
    width = max(e - b for b, e in bounds)
    begin, end = (0, values) if mutant == "full_replica" else bounds[rank]

    # The state this rank keeps: its slice of the flat parameters (all of it for a replica).
    shard = torch.nn.Parameter(torch.from_numpy(job["params"]))
    if mutant == "full_replica":
        flat = shard.detach()
    else:
        padded = torch.zeros(width)
        padded[:end - begin] = shard.detach()
        parts = [torch.empty(width) for _ in range(shards)]
        dist.all_gather(parts, padded, group=group)
        flat = torch.cat([p[:e - b] for p, (b, e) in zip(parts, bounds)])
    kernel = flat[:dk].reshape(d, k).clone().requires_grad_(True)
    bias = flat[dk:].clone().requires_grad_(True)

    x, y = torch.from_numpy(job["x"]), torch.from_numpy(job["y"])
    r = x @ kernel + bias - y
    local = torch.sum(r * r)
    if mutant == "no_average":
        loss_part = local / float(max(x.shape[0], 1) * k)
    else:
        loss_part = local / float(job["count"])
    loss_part.backward()

    loss = loss_part.detach().reshape(1).clone()
    grad = torch.cat([kernel.grad.reshape(-1), bias.grad])
    dist.all_reduce(loss, op=dist.ReduceOp.SUM, group=group)
    dist.all_reduce(grad, op=dist.ReduceOp.SUM, group=group)
    del kernel, bias, flat  # the gathered copy is temporary: only the shard is kept

    shard.grad = grad[begin:end].clone()
    torch.optim.SGD([shard], lr=float(lr)).step()
    stored = shard.detach()
    held = torch.arange(begin, begin + stored.numel())
    return {"loss": loss.numpy(), "params": stored.numpy().copy(), "grads": shard.grad.numpy().copy(),
            "kernel": int((held < dk).sum()), "bias": int((held >= dk).sum())}


def worker_main(rank: int, world: int, port: int, conn: Connection) -> None:
    """A gloo rank: joins the world, makes the per-S groups, then runs jobs until told to stop."""
    _die_with_parent()
    if not dist.is_available() or not dist.is_gloo_available():
        conn.send(f"torch {torch.__version__} has no torch.distributed with gloo")
        return
    torch.set_num_threads(1)  # one thread: the same summation order on every run
    timeout = datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world, timeout=timeout)
    groups = {s: dist.new_group(ranks=list(range(s)), timeout=timeout) for s in range(1, world + 1)}
    conn.send("ready")
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            break
        if job is None:
            break
        try:
            conn.send(_worker_step(rank, groups, job))
        except Exception as e:  # noqa: BLE001 - reported to the coordinator, which restarts
            conn.send({"error": f"rank {rank}: {type(e).__name__}: {e}"})
    dist.destroy_process_group()


# ---- coordinator side ---------------------------------------------------------------


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Workers:
    """The gloo world: MAX_SHARDS worker processes, started once, killed with the adapter."""

    def __init__(self, world: int = MAX_SHARDS) -> None:
        self.world = world
        self.procs: list[multiprocessing.process.BaseProcess] = []
        self.conns: list[Connection] = []
        self.ready = False

    def start(self) -> None:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # loopback only
        ctx = multiprocessing.get_context("forkserver")
        # torch._dynamo too: torch.optim imports it on the first optimizer made, about
        # 0.5 s of CPU in each rank where the forkserver imports it once.
        ctx.set_forkserver_preload(["torch", "torch.distributed", "torch._dynamo"])
        port = _free_loopback_port()
        for rank in range(self.world):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=worker_main, args=(rank, self.world, port, child), daemon=True)
            p.start()
            child.close()
            self.procs.append(p)
            self.conns.append(parent)

    def _receive(self, rank: int, timeout: float) -> Any:
        conn = self.conns[rank]
        if not conn.poll(timeout):
            raise RuntimeError(f"rank {rank} did not answer within {timeout} s")
        try:
            return conn.recv()
        except (EOFError, OSError):
            raise RuntimeError(f"rank {rank} died (exit code {self.procs[rank].exitcode})") from None

    def run(self, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Sends jobs[i] to rank i and returns the answers; restarts the world on failure."""
        try:
            if not self.procs:
                self.start()
            if not self.ready:
                for rank in range(self.world):
                    answer = self._receive(rank, STARTUP_TIMEOUT_S)
                    if answer != "ready":
                        raise RuntimeError(f"rank {rank} failed to start: {answer}")
                self.ready = True
            for rank, job in enumerate(jobs):
                self.conns[rank].send(job)
            answers = [self._receive(rank, COLLECTIVE_TIMEOUT_S + 10) for rank in range(len(jobs))]
        except Exception:
            self.stop()
            raise
        errors = [a["error"] for a in answers if "error" in a]
        if errors:
            self.stop()  # a failed collective leaves the groups unusable
            raise RuntimeError("; ".join(errors))
        return answers

    def stop(self) -> None:
        for conn in self.conns:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        for p in self.procs:
            p.join(timeout=2)
            if p.is_alive():
                p.kill()
                p.join(timeout=2)
        self.procs, self.conns, self.ready = [], [], False


def step(case: sgdc_adapter.Case, workers: Workers, mutant: str | None = None) -> dict[str, Any]:
    n, d, k, shards = case.n, case.d, case.k, case.num_shards
    if shards > workers.world:
        raise sgdc_adapter.RejectCase(f"at most {workers.world} shards (gloo ranks)")
    flat = np.concatenate([case.kernel.reshape(-1), case.bias]).astype(F32)
    param_bounds = split_bounds(flat.size, shards)
    rows = n
    if mutant == "drop_remainder_rows":
        rows = (n // shards) * shards
    row_bounds = split_bounds(rows, shards)
    jobs = []
    for rank in range(shards):
        pb, pe = (0, flat.size) if mutant == "full_replica" else param_bounds[rank]
        rb, re = row_bounds[rank]
        jobs.append({"n": n, "d": d, "k": k, "shards": shards, "lr": case.lr, "mutant": mutant,
                     "count": rows * k, "params": flat[pb:pe].copy(),
                     "x": case.x[rb:re].copy(), "y": case.y[rb:re].copy()})
    answers = workers.run(jobs)
    if mutant == "full_replica":
        params, grads = answers[0]["params"], answers[0]["grads"]
    else:
        params = np.concatenate([a["params"] for a in answers])
        grads = np.concatenate([a["grads"] for a in answers])
    dk = d * k
    return {"loss": answers[0]["loss"].astype(F32),
            "kernel": params[:dk].reshape(d, k), "bias": params[dk:],
            "grad_kernel": grads[:dk].reshape(d, k), "grad_bias": grads[dk:],
            "shards": [{"kernel": a["kernel"], "bias": a["bias"]} for a in answers]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", choices=MUTANTS, help="inject one sharding bug")
    mutant = parser.parse_args().mutant
    # torch's version from its metadata: importing it here would cost this process a
    # second of CPU that only the workers need (they say when gloo is missing).
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        sgdc_adapter.skip("torch is not installed")
    sgdc_adapter.reserve_stdout()  # before the workers start: they must not inherit it
    workers = Workers()
    atexit.register(workers.stop)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(0))  # sys.exit runs atexit: workers stop
    workers.start()  # the ranks start up while the handshake goes on
    sgdc_adapter.serve(
        lambda case: step(case, workers, mutant),
        name="torch-distributed" if mutant is None else f"torch-distributed-mutant-{mutant}",
        version=version,
        capabilities=("grads", "shard_layout"),
        subnormals="ieee",
        sharded=True,
        max_shards=MAX_SHARDS,
    )


if __name__ == "__main__":
    main()
