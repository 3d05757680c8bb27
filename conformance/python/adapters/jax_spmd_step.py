#!/usr/bin/env python3
"""The step sharded with JAX SPMD over num_shards CPU devices: ZeRO-3 / FSDP placement.

    conformance/python/run-adapter conformance/python/adapters/jax_spmd_step.py [--mutant NAME]
    conformance/python/run-adapter conformance/python/adapters/jax_spmd_step.py --dump-hlo N,D,K,S

Devices: JAX on the CPU is given MAX_DEVICES (8) host devices before it is imported
(`--xla_force_host_platform_device_count`); a case with num_shards = S runs on a
one-axis mesh ("shards") of the first S of them. A larger S is rejected, and the hello
reply says so (max_shards = 8), so the suite asks for no more.

Parameters: one flat vector of P = (D + 1) * K values (kernel row-major, then bias),
split into S contiguous parts as numpy.array_split does (the first P % S shards hold one
value more). JAX shards an array only in equal blocks, so the parameters live in an
array [S, C] with C = ceil(P / S), sharded NamedSharding(mesh, P("shards", None)): row s
is device s's part, its unused tail (at most one slot) zero padding that no result reads.

Batch: rows are split the same way (array_split) into an array [S, R, D] (R = ceil(N/S))
sharded on its first axis; padding rows are masked out of the residual with a select,
so they add exact zeros and never a NaN. The loss is divided by N*K, the real count.

The step is one jax.jit of the global computation with these shardings: gathering the
parameters from the flat shards, the residual on each batch shard, value_and_grad, and
the update on the sharded parameters. XLA's SPMD partitioner inserts the collectives
(all-gather of the parameters, all-reduce / reduce-scatter of the loss and gradient
partial sums); `--dump-hlo` prints the compiled module (to stdout, then exits) so a
test can see them. One
executable per (N, D, K, S), reused for every case of that shape: the learning rate,
the optimizer and its hyperparameters are arguments.

Optimizers, written out as the spec defines them (docs/spec/step.md, Optimizers and
Adam), elementwise on the sharded parameters: plain SGD, SGD with momentum (dampening,
Nesterov, coupled or decoupled weight decay) and Adam (coupled or decoupled decay,
eps_root; t = step + 1 in float32, the bias corrections by a float32 power). The state,
the momentum buffer or Adam's two moments, is laid out as the parameters, [S, C] with the
same sharding: each device keeps the state of its own part (ZeRO-3). Which optimizer
runs, Nesterov, the decay convention and fresh state are flags among the arguments and
the result is selected elementwise (`jnp.where`), so the optimizers share the one
executable per shape instead of compiling their own.

Layout: the `shards` reported are read from the updated parameter array itself: for
each of its `addressable_shards`, which rows of [S, C] that device holds, counted as
kernel or bias elements (padding excluded); with momentum or Adam, likewise from each
updated state array, summed ("state_kernel", "state_bias").

Subnormals: XLA on CPU flushes subnormals (FTZ/DAZ), so subnormals="ftz".

Mutants (--mutant, each a sharding bug the suite must reject):
  no_average           each shard differentiates its own mean loss and the partial
                       gradients are summed across shards without dividing by S (an
                       all-reduce SUM of shard means instead of the global mean)
  drop_remainder_rows  each shard takes N // S rows; the N % S remainder rows are lost
  full_replica         every device keeps the whole parameter vector (replicated, not
                       sharded) and the layout says so: a placement violation
"""

from __future__ import annotations

import argparse
import collections
import os
from typing import Any

import sgdc_adapter

MAX_DEVICES = 8

os.environ["JAX_PLATFORMS"] = "cpu"
# The device count is fixed when JAX initialises its backend, so it is set before import.
_flags = os.environ.get("XLA_FLAGS", "")
if "xla_force_host_platform_device_count" not in _flags:
    os.environ["XLA_FLAGS"] = f"{_flags} --xla_force_host_platform_device_count={MAX_DEVICES}".strip()

jax, jnp, np = sgdc_adapter.require("jax", "jax.numpy", "numpy")
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

F32 = np.float32
MUTANTS = ("no_average", "drop_remainder_rows", "full_replica")


def split_sizes(total: int, parts: int) -> list[int]:
    """Sizes of numpy.array_split(range(total), parts): the remainder goes to the first parts."""
    q, r = divmod(total, parts)
    return [q + 1 if s < r else q for s in range(parts)]


def slots(total: int, parts: int, width: int) -> Any:
    """Position of each of `total` values in a [parts, width] array, array_split-placed."""
    out, start = np.empty(total, dtype=np.int32), 0
    for s, size in enumerate(split_sizes(total, parts)):
        out[start:start + size] = s * width + np.arange(size)
        start += size
    return out


# The hyperparameter vector of a step, in this order (float32; flags 0 or 1).
HYPERPARAMETERS = ("lr", "kind", "momentum", "dampening", "nesterov", "weight_decay",
                   "decoupled", "fresh", "b1", "b2", "eps", "eps_root", "t")
SGD, MOMENTUM, ADAM = 0, 1, 2  # "kind"


def update(p: Any, g: Any, state1: Any, state2: Any, h: Any) -> tuple[Any, Any, Any]:
    """The optimizer's update, elementwise: the new parameters and state. Plain SGD,
    p - lr g; momentum (state1 the buffer); Adam (state1 and state2 the moments). Each
    form is computed as the spec writes it and the declared one selected, so an
    optimizer's value never depends on the others' (jnp.where selects; it does not mix)."""
    (lr, kind, mu, damp, nesterov, wd, decoupled, fresh, b1, b2, eps, eps_root,
     t) = (h[i] for i in range(len(HYPERPARAMETERS)))
    decoupled = decoupled > 0.5
    ge = jnp.where(decoupled, g, g + wd * p)
    # Momentum: a fresh buffer is the decayed gradient itself (no dampening), and so is
    # the buffer at mu = 0 (nothing to dampen).
    buf = jnp.where((fresh > 0.5) | (mu == 0), ge, mu * state1 + (1 - damp) * ge)
    heavy_ball = jnp.where(nesterov > 0.5, ge + mu * buf, buf)
    # Adam: fresh moments are zeros; t counts this step.
    m = b1 * state1 + (1 - b1) * ge
    v = b2 * state2 + (1 - b2) * (ge * ge)
    mh, vh = m / (1 - b1 ** t), v / (1 - b2 ** t)
    adam = mh / (jnp.sqrt(vh + eps_root) + eps)
    direction = jnp.where(kind == MOMENTUM, heavy_ball, adam)
    stateful = p - lr * jnp.where(decoupled, direction + wd * p, direction)
    return (jnp.where(kind == SGD, p - lr * g, stateful),
            jnp.where(kind == MOMENTUM, buf, m), v)


class ShardedStep:
    """The jitted step for one (n, d, k, S), with its mesh and placements."""

    def __init__(self, n: int, d: int, k: int, shards: int, mutant: str | None = None) -> None:
        if jax.device_count() < shards:
            raise sgdc_adapter.RejectCase(f"at most {jax.device_count()} shards (CPU devices)")
        self.n, self.d, self.k, self.shards, self.mutant = n, d, k, shards, mutant
        self.values = (d + 1) * k
        self.width = -(-self.values // shards)            # C = ceil(P / S)
        self.rows = max(1, -(-n // shards))                # R = ceil(N / S)
        self.param_slots = slots(self.values, shards, self.width)
        self.row_slots = slots(n, shards, self.rows)
        self.owner = np.full(shards * self.width, -1, dtype=np.int64)
        self.owner[self.param_slots] = np.arange(self.values)
        self.owner = self.owner.reshape(shards, self.width)

        self.mesh = Mesh(np.array(jax.devices()[:shards]), ("shards",))
        spec = PartitionSpec() if mutant == "full_replica" else PartitionSpec("shards", None)
        self.param_sharding = NamedSharding(self.mesh, spec)
        self.batch_sharding = NamedSharding(self.mesh, PartitionSpec("shards", None, None))
        self.mask_sharding = NamedSharding(self.mesh, PartitionSpec("shards", None))
        self.replicated = replicated = NamedSharding(self.mesh, PartitionSpec())
        p = self.param_sharding
        self.fn = jax.jit(
            self._step,
            in_shardings=(p, p, p, self.batch_sharding, self.batch_sharding,
                          self.mask_sharding, replicated),
            out_shardings=(replicated, p, p, p, p))

    def _mask_and_counts(self) -> tuple[Any, int]:
        """Which padded rows are real, and the per-shard row counts."""
        kept = self.n
        if self.mutant == "drop_remainder_rows":
            kept = (self.n // self.shards) * self.shards
        real = np.zeros(self.shards * self.rows, dtype=bool)
        real[self.row_slots[:kept]] = True
        return real.reshape(self.shards, self.rows), kept

    def _step(self, params: Any, state1: Any, state2: Any, x: Any, y: Any, mask: Any,
              h: Any) -> tuple[Any, ...]:
        """Loss, new parameters, gradients and the new state (the buffer or the first
        moment; the second moment) from the parameters, the state, the batch and the
        hyperparameter vector `h` (HYPERPARAMETERS, in that order)."""
        d, k = self.d, self.k
        real, kept = self._mask_and_counts()
        count = F32(kept * k)
        param_slots = jnp.asarray(self.param_slots)

        def residual(params: Any) -> Any:
            # FSDP's all-gather: every device needs the whole layer for its batch shard.
            full = jax.lax.with_sharding_constraint(params, self.replicated)
            flat = full.reshape(-1)[param_slots]
            kernel, bias = flat[:d * k].reshape(d, k), flat[d * k:]
            r = jnp.einsum("srd,dk->srk", x, kernel) + bias - y
            return jnp.where(mask[..., None], r, F32(0))   # select: padding never leaks NaN

        def loss_fn(params: Any) -> Any:
            r = residual(params)
            return jnp.sum(r * r) / count

        def shard_mean_sum(params: Any) -> Any:
            # The no_average bug: sum over shards of each shard's own mean loss.
            r = residual(params)
            per_shard = jnp.asarray(np.maximum(real.sum(axis=1), 1) * k, dtype=F32)
            return jnp.sum(jnp.sum(r * r, axis=(1, 2)) / per_shard)

        loss, grads = jax.value_and_grad(loss_fn)(params)
        if self.mutant == "no_average":
            grads = jax.grad(shard_mean_sum)(params)
        new_params, new_state1, new_state2 = update(params, grads, state1, state2, h)
        return loss, new_params, grads, new_state1, new_state2

    def flat(self, kernel: Any, bias: Any) -> Any:
        """A kernel and bias pair as the sharded [S, C] array (padding zeros)."""
        flat = np.zeros(self.shards * self.width, dtype=F32)
        flat[self.param_slots] = np.concatenate([np.asarray(kernel, F32).reshape(-1),
                                                 np.asarray(bias, F32)])
        return jax.device_put(flat.reshape(self.shards, self.width), self.param_sharding)

    def place(self, case: sgdc_adapter.Case) -> tuple[Any, ...]:
        """The case's inputs as sharded device arrays, its state as the parameters', and
        the hyperparameter vector."""
        x = np.zeros((self.shards * self.rows, self.d), dtype=F32)
        y = np.zeros((self.shards * self.rows, self.k), dtype=F32)
        x[self.row_slots], y[self.row_slots] = case.x, case.y
        mask, _ = self._mask_and_counts()
        h = dict.fromkeys(HYPERPARAMETERS, 0.0)
        h["lr"], h["fresh"], h["t"] = case.lr, float(case.fresh_state), float(case.step + 1)
        o = case.optimizer
        zeros = (np.zeros((self.d, self.k), F32), np.zeros(self.k, F32))
        state1 = state2 = zeros
        if isinstance(o, sgdc_adapter.AdamOptimizer):
            h.update(kind=ADAM, b1=o.b1, b2=o.b2, eps=o.eps, eps_root=o.eps_root,
                     weight_decay=o.weight_decay, decoupled=float(o.decay == "decoupled"))
            if case.momentum_kernel is not None:
                state1 = (case.momentum_kernel, case.momentum_bias)
            if case.second_moment_kernel is not None:
                state2 = (case.second_moment_kernel, case.second_moment_bias)
        elif o is not None:
            h.update(kind=MOMENTUM, momentum=o.momentum, dampening=o.dampening,
                     nesterov=float(o.nesterov), weight_decay=o.weight_decay,
                     decoupled=float(o.decay == "decoupled"))
            if case.momentum_kernel is not None:
                state1 = (case.momentum_kernel, case.momentum_bias)
        return (self.flat(case.kernel, case.bias), self.flat(*state1), self.flat(*state2),
                jax.device_put(x.reshape(self.shards, self.rows, self.d), self.batch_sharding),
                jax.device_put(y.reshape(self.shards, self.rows, self.k), self.batch_sharding),
                jax.device_put(mask, self.mask_sharding),
                jnp.asarray([h[key] for key in HYPERPARAMETERS], dtype=F32))

    def unflatten(self, array: Any) -> tuple[Any, Any]:
        flat = np.asarray(array).reshape(-1)[self.param_slots]
        return flat[:self.d * self.k].reshape(self.d, self.k), flat[self.d * self.k:]

    def layout(self, array: Any) -> list[dict[str, int]]:
        """Per mesh device, the kernel and bias elements its addressable shard of `array` holds."""
        dk, per_device = self.d * self.k, {}
        for shard in array.addressable_shards:
            held = self.owner[shard.index[0]]
            held = held[held >= 0]
            per_device[shard.device] = {"kernel": int(np.sum(held < dk)), "bias": int(np.sum(held >= dk))}
        return [per_device[dev] for dev in self.mesh.devices.flat]

    def hlo(self) -> str:
        """The compiled, partitioned HLO module as text."""
        params = jax.ShapeDtypeStruct((self.shards, self.width), F32, sharding=self.param_sharding)
        args = (params, params, params,
                jax.ShapeDtypeStruct((self.shards, self.rows, self.d), F32, sharding=self.batch_sharding),
                jax.ShapeDtypeStruct((self.shards, self.rows, self.k), F32, sharding=self.batch_sharding),
                jax.ShapeDtypeStruct((self.shards, self.rows), bool, sharding=self.mask_sharding),
                jax.ShapeDtypeStruct((len(HYPERPARAMETERS),), F32))
        return self.fn.lower(*args).compile().as_text()


_steps: collections.OrderedDict[tuple[int, int, int, int, str | None], ShardedStep] = collections.OrderedDict()
_CACHED_STEPS = 256  # executables kept, least recently used dropped: bounds the memory


def sharded_step(n: int, d: int, k: int, shards: int, mutant: str | None = None) -> ShardedStep:
    """The cached ShardedStep for this shape and shard count."""
    key = (n, d, k, shards, mutant)
    if key in _steps:
        _steps.move_to_end(key)
    else:
        _steps[key] = ShardedStep(n, d, k, shards, mutant)
        if len(_steps) > _CACHED_STEPS:
            _steps.popitem(last=False)
    return _steps[key]


def compiled_hlo(n: int, d: int, k: int, shards: int, mutant: str | None = None) -> str:
    """Compiled HLO text of the step for this shape and shard count."""
    return sharded_step(n, d, k, shards, mutant).hlo()


def step(case: sgdc_adapter.Case, mutant: str | None = None) -> dict[str, Any]:
    if case.num_shards > MAX_DEVICES:
        raise sgdc_adapter.RejectCase(f"at most {MAX_DEVICES} shards (CPU devices)")
    s = sharded_step(case.n, case.d, case.k, case.num_shards, mutant)
    loss, new_params, grads, state1, state2 = s.fn(*s.place(case))
    kernel, bias = s.unflatten(new_params)
    grad_kernel, grad_bias = s.unflatten(grads)
    out = {"loss": np.asarray(loss, dtype=F32), "kernel": kernel, "bias": bias,
           "grad_kernel": grad_kernel, "grad_bias": grad_bias, "shards": s.layout(new_params)}
    o = case.optimizer
    states = []
    if isinstance(o, sgdc_adapter.AdamOptimizer):
        out["momentum_kernel"], out["momentum_bias"] = s.unflatten(state1)
        out["second_moment_kernel"], out["second_moment_bias"] = s.unflatten(state2)
        states = [state1, state2]
    elif o is not None:
        out["momentum_kernel"], out["momentum_bias"] = s.unflatten(state1)
        states = [state1]
    if states:  # where each device keeps its state: read from the state arrays themselves
        for i, layout in enumerate(out["shards"]):
            held = [s.layout(a)[i] for a in states]
            layout["state_kernel"] = sum(part["kernel"] for part in held)
            layout["state_bias"] = sum(part["bias"] for part in held)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutant", choices=MUTANTS, help="inject one sharding bug")
    parser.add_argument("--dump-hlo", metavar="N,D,K,S",
                        help="print the compiled HLO of the step for this shape and exit")
    args = parser.parse_args()
    if args.dump_hlo:
        n, d, k, shards = (int(v) for v in args.dump_hlo.split(","))
        # The real stdout gets the dump alone; anything else printed goes to stderr.
        out = sgdc_adapter.reserve_stdout()
        out.write(compiled_hlo(n, d, k, shards, args.mutant).encode())
        out.flush()
        return
    sgdc_adapter.serve(
        lambda case: step(case, args.mutant),
        name="jax-spmd" if args.mutant is None else f"jax-spmd-mutant-{args.mutant}",
        version=jax.__version__,
        capabilities=("grads", "shard_layout"),
        subnormals="ftz",
        sharded=True,
        max_shards=MAX_DEVICES,
        momentum=sgdc_adapter.MomentumSupport(dampening=True, nesterov=True,
                                              weight_decay=("coupled", "decoupled")),
        adam=sgdc_adapter.AdamSupport(weight_decay=("coupled", "decoupled"), eps_root=True),
    )


if __name__ == "__main__":
    main()
