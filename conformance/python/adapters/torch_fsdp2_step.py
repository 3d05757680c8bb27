#!/usr/bin/env python3
"""The step as PyTorch FSDP2 runs it: `fully_shard` on a CPU DeviceMesh over gloo ranks.

    conformance/python/run-adapter conformance/python/adapters/torch_fsdp2_step.py [--mutant NAME]

Ranks: this process speaks the protocol and coordinates. It starts a world of
MAX_SHARDS (8) gloo rank processes once (a forkserver that has imported torch forks
them, so the world is up in seconds; TCP rendezvous on a free port of 127.0.0.1,
GLOO_SOCKET_IFNAME=lo). Each rank builds `init_device_mesh("cpu", (S,))` for every
S = 1..8 (the mesh of ranks 0..S-1), then serves cases until told to stop. A case with
num_shards = S is sent to ranks 0..S-1; the others wait. No process is started per case,
and this process never imports torch (only the ranks compute).

Per case, on each rank r of S (what a training step under FSDP2 does):
  1. the model: `nn.Linear(D, K)` built on the meta device, `fully_shard(model, mesh)`,
     `to_empty(device="cpu")`, kept for later cases of the same (D, K, S); its weight
     [K, D] and bias [K] are DTensors placed Shard(0): each rank stores its torch.chunk
     of the K output rows. The case's parameters are loaded into each rank's local shard
     (`distribute_tensor(..., src_data_rank=None)`: the rank's own chunk, no collective);
  2. its rows of the batch: `torch.tensor_split(x, S)[r]` (possibly none);
  3. forward (FSDP2 all-gathers the parameters first), and the loss of its rows
     normalised for the whole batch: sum of squared residuals / (N * K). FSDP2 is set
     to sum the ranks' gradients, not average them (set_gradient_divide_factor(1.0); gloo
     has no PREMUL_SUM, so with set_force_sum_reduction_for_comms(True)), so the sum
     over the ranks is the mean over all N * K elements and the gradient is the
     baseline's, however unevenly the rows are split (a rank with no rows contributes an
     exact zero). Scaling each rank's loss by S / (N * K) under FSDP2's default average
     gives the same gradient in exact arithmetic, but multiplies the gradient by S before
     the reduction divides it: it overflows S times sooner;
  4. backward (FSDP2 reduce-scatters the gradients: each rank keeps the averaged
     gradient of its own rows of the parameters), and `torch.optim.SGD` steps the local
     shards; the reported loss is the all-reduced sum of squares / (N * K), taken before
     the update.
Momentum: `torch.optim.SGD` with momentum, dampening, Nesterov and (coupled) weight decay, set per
case in its param group; the case's buffer is loaded as a DTensor placed as its parameter
(each rank its own chunk) and the buffer after the step read from the rank's state, so the
optimizer state is sharded with the parameters, and each rank reports its buffer's
elements ("state_kernel", "state_bias"). At momentum 0 torch keeps no buffer (and ignores
the dampening): the rank reports the decayed gradient SGD used, the spec's buffer there.
Adam: `torch.optim.Adam` (coupled weight decay) or `torch.optim.AdamW` (decoupled) on
the local shards, without eps_root (torch has none), its hyperparameters set per case
in the param group. The case's moments are loaded as DTensors placed as their parameter
(`exp_avg`, `exp_avg_sq`; zeros in fresh state) with `step` the float32 tensor torch keeps
(t = step + 1); a case in fresh state at step 0 leaves the state empty, and torch makes
it as on a first step. Each rank reports both moments' elements as its state: sharded,
twice its parameter elements.

Each rank sends back its local shards (`to_local()`) of the parameters and gradients;
this process puts them together in rank order and reports how many kernel and bias
elements each rank stores, read from those local shards ("shard_layout", placement
"output_chunks": the suite checks the sizes against torch.chunk's rule).

Failures: a rank that raises answers the case with its error, and a rank that dies or
does not answer within ANSWER_TIMEOUT_S is named in the error; the world is then
stopped (a failed collective leaves the process groups unusable) and restarted for the
next case. Collectives time out after COLLECTIVE_TIMEOUT_S. Every rank dies with this
process: end of input, SIGTERM/SIGINT/SIGHUP and exit stop the ranks, and a rank is
killed by the kernel when its parent goes (PR_SET_PDEATHSIG; the forkserver exits when
this process does, however it ends).

Needs torch >= 2.13 (scripts/install-python-deps.sh pins 2.13.0, CPU); skipped (77)
without it. Subnormals: PyTorch on the CPU and gloo's sums keep them: "ieee".

Mutants (--mutant, each a bug a user of FSDP2 could write; the suite must reject each):
  mean_of_shard_means  each rank's loss is F.mse_loss over its own rows, as tutorials
                       write it: the mean of the ranks' means, wrong when N % S != 0
                       (and NaN on a rank with no rows)
  missing_average      each rank's loss scaled by S / (N * K), as for FSDP2's default
                       average, while the gradients are summed: S times the gradient
  reduce_dtype_bf16    MixedPrecisionPolicy(reduce_dtype=torch.bfloat16): the gradients
                       are reduced in bfloat16 (rounded to 8 bits even at S = 1)
  drop_remainder_rows  each rank takes N // S rows; the N % S remainder rows are lost
  replicated_state     fully_shard on a 2-D mesh (S, 1): HSDP with S replicas of one
                       shard, so every rank keeps the whole layer (numbers right, state
                       not sharded) and the layout says so
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import datetime
import importlib.metadata
import multiprocessing
import os
import signal
import socket
import sys
import time
import traceback
from collections import Counter
from multiprocessing.connection import Connection, wait
from typing import Any

import sgdc_adapter

np, = sgdc_adapter.require("numpy")  # torch only in the ranks (see torch_version)

MAX_SHARDS = 8
MIN_TORCH = (2, 13)
COLLECTIVE_TIMEOUT_S = 30
ANSWER_TIMEOUT_S = 45       # below the suite's default case timeout (60 s)
STARTUP_TIMEOUT_S = 120
MODELS_KEPT = 64            # sharded models kept per rank, one per (D, K, S)
MUTANTS = ("mean_of_shard_means", "missing_average", "reduce_dtype_bf16", "drop_remainder_rows",
           "replicated_state")
F32 = np.float32
Job = dict[str, Any]


def torch_version() -> str:
    """The installed torch's version, read without importing torch (this process never
    does: only the ranks compute); skip() when torch is missing or older than MIN_TORCH."""
    try:
        version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        sgdc_adapter.skip("torch is not installed")
    release = tuple(int(p) for p in version.split("+")[0].split(".")[:2])
    if release < MIN_TORCH:
        need = ".".join(map(str, MIN_TORCH))
        sgdc_adapter.skip(f"torch {version} is older than {need} (FSDP2 on CPU)")
    return version


# ---- rank side ----------------------------------------------------------------------


def _die_with_parent() -> None:
    """Linux: the kernel kills this rank when its parent (the forkserver) goes."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass
    if os.getppid() == 1:  # the parent went before the request took effect
        os._exit(1)


class Rank:
    """One gloo rank: its meshes, and the sharded models it keeps between cases."""

    def __init__(self, rank: int, world: int, mutant: str | None) -> None:
        from torch.distributed.device_mesh import init_device_mesh
        self.rank, self.mutant = rank, mutant
        # Every rank builds every mesh (process groups are made collectively), in order.
        if mutant == "replicated_state":  # (S, 1) is HSDP: S replicas of one shard
            self.meshes = {s: init_device_mesh("cpu", (s, 1), mesh_dim_names=("replicate", "shard"))
                           for s in range(1, world + 1)}
        else:
            self.meshes = {s: init_device_mesh("cpu", (s,)) for s in range(1, world + 1)}
        self.models: dict[tuple[int, int, int], tuple[Any, Any]] = {}

    def model(self, d: int, k: int, shards: int) -> tuple[Any, dict[str, Any]]:
        """The sharded nn.Linear(d, k) over ranks 0..shards-1, and its optimizers by name:
        "sgd" (torch.optim.SGD), "coupled" (Adam) and "decoupled" (AdamW)."""
        import torch
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        key = (d, k, shards)
        if key not in self.models:
            if len(self.models) >= MODELS_KEPT:
                self.models.pop(next(iter(self.models)))
            model = torch.nn.Linear(d, k, device="meta")
            policy = MixedPrecisionPolicy(
                reduce_dtype=torch.bfloat16 if self.mutant == "reduce_dtype_bf16" else None)
            # Resharded after the forward and gathered again for the backward, as every
            # layer of a model but its root is by default: the parameters are whole
            # only while a pass needs them.
            fully_shard(model, mesh=self.meshes[shards], mp_policy=policy,
                        reshard_after_forward=True)
            # Summed, not averaged: each rank's loss is already normalised for the batch.
            model.set_gradient_divide_factor(1.0)
            model.set_force_sum_reduction_for_comms(True)
            model.to_empty(device="cpu")
            self.models[key] = model, {
                "sgd": torch.optim.SGD(model.parameters(), lr=0.0),
                "coupled": torch.optim.Adam(model.parameters(), lr=0.0),
                "decoupled": torch.optim.AdamW(model.parameters(), lr=0.0)}
        return self.models[key]

    def step(self, job: Job) -> Job:
        """Loads the case into this rank's shards, runs the training step, and answers
        with the loss and this rank's local shards (and, when asked, the collectives
        the step ran, counted by the profiler)."""
        import torch
        from torch.distributed.tensor import distribute_tensor
        shards = job["shards"]
        x, y = torch.from_numpy(job["x"]), torch.from_numpy(job["y"])
        model, optimizers = self.model(x.shape[1], y.shape[1], shards)
        with torch.no_grad():  # this rank's chunk of the case's parameters, no collective
            for p, full in ((model.weight, job["kernel"].T), (model.bias, job["bias"])):
                part = distribute_tensor(torch.from_numpy(np.ascontiguousarray(full)),
                                         p.device_mesh, p.placements, src_data_rank=None)
                p.to_local().copy_(part.to_local())
        mom = job.get("momentum")  # None: plain SGD or Adam
        adam = job.get("adam")  # None: SGD
        opt = optimizers[adam["decay"] if adam else "sgd"]
        group_options = opt.param_groups[0]
        group_options["lr"] = job["lr"]
        if adam:
            group_options["betas"] = (adam["b1"], adam["b2"])
            group_options["eps"] = adam["eps"]
            group_options["weight_decay"] = adam["weight_decay"]
        else:
            group_options["momentum"] = mom["momentum"] if mom else 0.0
            group_options["nesterov"] = bool(mom and mom["nesterov"])
            group_options["dampening"] = mom["dampening"] if mom else 0.0
            group_options["weight_decay"] = mom["weight_decay"] if mom else 0.0

        def placed_as(p: Any, full: Any) -> Any:
            """This rank's chunk of `full`, placed as its parameter `p`: no collective."""
            return distribute_tensor(torch.from_numpy(np.ascontiguousarray(full)),
                                     p.device_mesh, p.placements, src_data_rank=None)

        before = {}
        for name, p in (("weight", model.weight), ("bias", model.bias)):
            opt.state.pop(p, None)  # fresh state, unless the case carries some
            buf = job.get("buf_" + name)
            if mom is not None and buf is not None and mom["momentum"] != 0:
                opt.state[p] = {"momentum_buffer": placed_as(p, buf)}
            if adam and not (adam["fresh"] and adam["step"] == 0):
                m, v = job.get("m_" + name), job.get("v_" + name)
                opt.state[p] = {
                    # torch keeps `step` as a float32 tensor on the CPU (_get_scalar_dtype).
                    "step": torch.tensor(float(adam["step"]), dtype=torch.float32),
                    "exp_avg": torch.zeros_like(p) if m is None else placed_as(p, m),
                    "exp_avg_sq": torch.zeros_like(p) if v is None else placed_as(p, v)}
            before[name] = p.detach().to_local().clone()
        opt.zero_grad(set_to_none=True)
        group = self.meshes[shards].get_group(0)
        counting = bool(job.get("count_collectives"))
        if counting:
            torch.distributed.barrier(group=group)  # outside the counted step
        with torch.profiler.profile() if counting else contextlib.nullcontext() as profile:
            loss = self.train_step(model, opt, x, y, shards, group)

        def local(t: Any) -> Any:
            return (t.to_local() if hasattr(t, "to_local") else t).detach().numpy().copy()

        grads = self.grads
        answer: Job = {"loss": loss.numpy().copy(), "weight": local(model.weight),
                       "bias": local(model.bias), "grad_weight": local(grads["weight"]),
                       "grad_bias": local(grads["bias"]),
                       "placements": str(model.weight.placements)}
        if mom is not None:
            for name, p in (("weight", model.weight), ("bias", model.bias)):
                buf = opt.state.get(p, {}).get("momentum_buffer")
                if buf is None:  # momentum 0: no buffer; the decayed gradient SGD used
                    buf = grads[name].to_local().add(before[name], alpha=mom["weight_decay"])
                answer["buf_" + name] = local(buf)
        if adam is not None:
            for name, p in (("weight", model.weight), ("bias", model.bias)):
                answer["m_" + name] = local(opt.state[p]["exp_avg"])
                answer["v_" + name] = local(opt.state[p]["exp_avg_sq"])
        if profile is not None:
            answer["collectives"] = collective_counts(e.name for e in profile.events())
        return answer

    def train_step(self, model: Any, opt: Any, x: Any, y: Any, shards: int, group: Any) -> Any:
        """One step of data-parallel training on this rank: the code a user of FSDP2
        writes (and where the mutants put their bugs). Returns the loss before the update."""
        import torch
        import torch.distributed as dist
        import torch.nn.functional as F
        (n, k), rank = y.shape, self.rank
        if self.mutant == "drop_remainder_rows":
            q = n // shards
            xr, yr = x[rank * q:(rank + 1) * q], y[rank * q:(rank + 1) * q]
        else:
            xr, yr = torch.tensor_split(x, shards)[rank], torch.tensor_split(y, shards)[rank]
        out = model(xr)  # FSDP2 all-gathers the parameters before the forward
        if self.mutant == "mean_of_shard_means":
            local_loss = F.mse_loss(out, yr)
            loss = local_loss.detach().clone()
            dist.all_reduce(loss, group=group)
            loss /= shards
        else:
            squares = ((out - yr) ** 2).sum()
            # The ranks' gradients are summed: each rank's share of the global mean.
            scale = shards / (n * k) if self.mutant == "missing_average" else 1.0 / (n * k)
            local_loss = squares * scale
            loss = squares.detach().clone()
            dist.all_reduce(loss, group=group)
            loss /= n * k
        local_loss.backward()  # FSDP2 gathers again, then reduce-scatters the gradients
        # The reduced gradients as backward left them (SGD's foreach Nesterov path adds
        # momentum * buffer into .grad in place).
        self.grads = {"weight": model.weight.grad.detach().clone(),
                      "bias": model.bias.grad.detach().clone()}
        opt.step()  # SGD or Adam on this rank's shards, its state sharded with them
        return loss


def collective_counts(names: Any) -> dict[str, int]:
    """How many times each collective ran, from profiler event names: the c10d ops
    ("c10d::...") and what the gloo backend executed for them ("gloo:...")."""
    return dict(Counter(name for name in names if name.startswith(("c10d::", "gloo:"))))


def rank_main(rank: int, world: int, port: int, mutant: str | None, conn: Connection) -> None:
    """A gloo rank: joins the world, builds its meshes, then runs cases until told to stop."""
    _die_with_parent()
    os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # loopback only
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)  # one thread: the same summation order on every run
    try:
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world,
                                timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_S))
        state = Rank(rank, world, mutant)
    except Exception as e:  # noqa: BLE001 - reported to the coordinator
        conn.send(("error", f"rank {rank} failed to start: {type(e).__name__}: {e}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            job = conn.recv()
        except (EOFError, OSError):
            break
        if job is None:
            break
        try:
            conn.send(("ok", state.step(job)))
        except Exception as e:  # noqa: BLE001 - reported; the coordinator stops the world
            traceback.print_exc(file=sys.stderr)
            conn.send(("error", f"rank {rank}: {type(e).__name__}: {e}"))
            break
    dist.destroy_process_group()


# ---- coordinator side ---------------------------------------------------------------


class RankFailure(RuntimeError):
    """A rank failed, died or did not answer: the case's error."""


def _free_loopback_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Ranks:
    """The world of `world` gloo ranks: started once, stopped with this process."""

    def __init__(self, world: int = MAX_SHARDS, mutant: str | None = None) -> None:
        self.world, self.mutant = world, mutant
        self.procs: list[Any] = []
        self.conns: list[Connection] = []
        self.ready = False

    def start(self) -> None:
        """Starts the ranks: returns once the forkserver (which imports torch first) has
        forked them; they join the world in the background."""
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(["torch", "torch.distributed.fsdp"])
        port = _free_loopback_port()
        for rank in range(self.world):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=rank_main, args=(rank, self.world, port, self.mutant, child),
                            daemon=True, name=f"fsdp2-rank-{rank}")
            p.start()
            child.close()
            self.procs.append(p)
            self.conns.append(parent)

    def _collect(self, count: int, timeout: float, phase: str) -> list[Any]:
        """The next message of ranks 0..count-1; RankFailure naming the first that fails."""
        deadline = time.monotonic() + timeout
        answers: dict[int, Any] = {}
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
                    answers[r] = value
                elif not self.procs[r].is_alive():
                    raise RankFailure(self._died(r, phase))
        return [answers[r] for r in range(count)]

    def _died(self, rank: int, phase: str) -> str:
        self.procs[rank].join(timeout=1)
        return f"rank {rank} died ({phase}; exit code {self.procs[rank].exitcode})"

    def run(self, job: Job, shards: int) -> list[Job]:
        """Runs `job` on ranks 0..shards-1 and returns their answers in rank order. On a
        failure the world is stopped (and started again by the next call)."""
        try:
            if not self.procs:
                self.start()
            if not self.ready:
                self._collect(self.world, STARTUP_TIMEOUT_S, "starting")
                self.ready = True
            for rank in range(shards):
                try:
                    self.conns[rank].send({**job, "shards": shards})
                except OSError:
                    raise RankFailure(self._died(rank, "before the case")) from None
            return self._collect(shards, ANSWER_TIMEOUT_S, "during the case")
        except BaseException:
            self.stop()
            raise

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


def assemble(parts: list[Any], rows: int) -> Any:
    """The whole tensor from the ranks' local parts: Shard(0) chunks in rank order, or
    (replicas) rank 0's copy when every rank holds all `rows` rows."""
    if sum(len(p) for p in parts) == rows:
        return np.concatenate(parts)
    if all(len(p) == rows for p in parts):
        return parts[0]
    raise RankFailure(f"the ranks' parts have {[len(p) for p in parts]} rows: neither a "
                      f"split of {rows} rows nor replicas")


def step(case: sgdc_adapter.Case, ranks: Ranks) -> dict[str, Any]:
    shards = case.num_shards
    if shards > ranks.world:
        raise sgdc_adapter.RejectCase(f"at most {ranks.world} shards (gloo ranks)")
    job: Job = {"x": case.x, "y": case.y, "kernel": case.kernel, "bias": case.bias,
                "lr": float(case.lr)}
    o = case.optimizer
    momentum = isinstance(o, sgdc_adapter.Optimizer)
    if momentum:
        job["momentum"] = {"momentum": float(o.momentum), "dampening": float(o.dampening),
                           "nesterov": bool(o.nesterov),
                           "weight_decay": float(o.weight_decay)}
        if not case.fresh_state:
            job["buf_weight"], job["buf_bias"] = case.momentum_kernel.T, case.momentum_bias
    adam = isinstance(o, sgdc_adapter.AdamOptimizer)
    if adam:
        if o.eps_root != 0:  # the kit rejects it first: eps_root is not declared
            raise sgdc_adapter.RejectCase("torch's Adam has no eps_root")
        job["adam"] = {"b1": float(o.b1), "b2": float(o.b2), "eps": float(o.eps),
                       "weight_decay": float(o.weight_decay), "step": case.step,
                       "fresh": case.fresh_state,
                       "decay": o.decay if o.weight_decay != 0 else "coupled"}
        for name, m, v, transposed in (("weight", case.momentum_kernel, case.second_moment_kernel,
                                        True),
                                       ("bias", case.momentum_bias, case.second_moment_bias,
                                        False)):
            if m is not None:
                job["m_" + name] = m.T if transposed else m
            if v is not None:
                job["v_" + name] = v.T if transposed else v
    parts = ranks.run(job, shards)

    def whole(name: str) -> Any:
        return assemble([p[name] for p in parts], case.k)

    out = {"loss": parts[0]["loss"].astype(F32),
           "kernel": whole("weight").T, "bias": whole("bias"),
           "grad_kernel": whole("grad_weight").T, "grad_bias": whole("grad_bias"),
           "shards": [{"kernel": int(p["weight"].size), "bias": int(p["bias"].size)}
                      for p in parts]}
    if momentum:
        out["momentum_kernel"], out["momentum_bias"] = whole("buf_weight").T, whole("buf_bias")
        for layout, p in zip(out["shards"], parts):  # where each rank keeps its buffer
            layout["state_kernel"] = int(p["buf_weight"].size)
            layout["state_bias"] = int(p["buf_bias"].size)
    if adam:
        out["momentum_kernel"], out["momentum_bias"] = whole("m_weight").T, whole("m_bias")
        out["second_moment_kernel"] = whole("v_weight").T
        out["second_moment_bias"] = whole("v_bias")
        for layout, p in zip(out["shards"], parts):  # where each rank keeps both moments
            layout["state_kernel"] = int(p["m_weight"].size + p["v_weight"].size)
            layout["state_bias"] = int(p["m_bias"].size + p["v_bias"].size)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", choices=MUTANTS, help="inject one FSDP2 usage bug")
    mutant = parser.parse_args().mutant
    version = torch_version()
    sgdc_adapter.reserve_stdout()  # before the ranks start: they must not inherit it
    ranks = Ranks(MAX_SHARDS, mutant)
    atexit.register(ranks.stop)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(0))  # sys.exit runs atexit: the ranks stop
    ranks.start()  # the ranks join the world while the handshake goes on
    sgdc_adapter.serve(
        lambda case: step(case, ranks),
        name="torch-fsdp2" if mutant is None else f"torch-fsdp2-mutant-{mutant}",
        version=version,
        capabilities=("grads", "shard_layout"),
        subnormals="ieee",
        sharded=True,
        max_shards=MAX_SHARDS,
        placement="output_chunks",
        momentum=sgdc_adapter.MomentumSupport(dampening=True, nesterov=True,
                                              weight_decay=("coupled",)),
        adam=sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"), eps_root=False),
    )


if __name__ == "__main__":
    main()
