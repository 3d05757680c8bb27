"""Adapter side of the sgd-conformance protocol, version 1 (JSON Lines over stdio).

An adapter author writes one function and hands it to `serve`:

    import numpy as np
    import sgdc_adapter

    def step(case):
        ...                        # case.n, .d, .k, .num_shards, .step, .lr, .kernel, .bias, .x, .y
        return {"loss": loss, "kernel": new_kernel, "bias": new_bias}

    sgdc_adapter.serve(step, name="my-impl", version="1.0", capabilities=("grads",))

`case.lr` is a numpy float32 scalar; kernel [d,k], bias [k], x [n,d] and y [n,k] are
writable float32 arrays; `case.step` is a Python int. `step` returns float32 values:
"loss" (scalar), "kernel", "bias", and, as promised by `capabilities`, "grad_kernel" and
"grad_bias" ("grads"), "step" (an int, or an integral float for a float counter:
"step_counter"), "shards" (a list of {"kernel": int, "bias": int}: "shard_layout").
Raising `RejectCase` (or any `ValueError`) answers the case with op "error" and the
exception's message; any other exception also answers op "error" and writes its
traceback to stderr, so one bad case never kills the adapter.

Declarations (keywords of `serve`), sent in the hello reply; the error bounds rely on
them, so declare honestly:

- `subnormals`: "ieee", or "ftz" when subnormal inputs or results may be flushed to zero
  (XLA on CPU does);
- `compute_format`: the format the matrix products' inputs and products are rounded to
  when narrower than float32 (tensor cores): "tf32", "bfloat16", "float16", or a mapping
  of fraction_bits, min_exponent and max_exponent; it drives every term of the bound,
  underflow and overflow included. Undeclared: float32;
- `precision`: mixed precision by stage, as FSDP2's `MixedPrecisionPolicy` defines it
  (the alternative to `compute_format`, which must then be float32 or left out): a
  mapping with the keys "param_dtype" (the compute copy of the parameters: the layer's
  inputs x are cast to it, as `cast_forward_inputs` does, and the layer's output and
  each rank's gradients are rounded to it), "reduce_dtype" (the dtype the ranks'
  gradients are summed in) and "master_dtype" (the dtype the parameters and optimizer
  state are stored and updated in), each "float32", "bfloat16" or "float16" (or a
  torch, NumPy or JAX dtype of that name: torch.bfloat16 is sent as "bfloat16"), e.g.
  `precision={"param_dtype": "bfloat16", "reduce_dtype": "float32"}`. Only the keys
  given are sent; the suite's defaults: param_dtype float32, reduce_dtype the
  param_dtype (as FSDP2's reduce_dtype=None), master_dtype float32;
- `unit_roundoff`: the largest relative error of any rounding; undeclared, the compute
  format's own (2**-24 for float32; 2**-11 for TF32 or float16, 2**-8 for bfloat16),
  and with `precision` the suite's to derive from the stages;
- `sharded=True`: the step really splits its work over `num_shards`, so results may
  differ across shard counts within the bound; `max_shards`: the most shards it can run;
- `counter=(dtype, at_end)`: the type the step counter is kept in, with "step_counter":
  dtype "int32", "uint32", "int64", "float32" or "float64", and at_end "wrap" (after the
  largest value comes 0) or "saturate" (the largest value stays; the only choice for a
  float counter). Largest values: 2**31-1, 2**32-1, 2**63-1, 2**24, 2**53. Undeclared, the
  suite assumes int64 and does not test the end of the range;
- `placement`, with "shard_layout": the rule by which the parameters are split over the
  shards that the "shards" layout reports: "flat" (the (d+1)*k values, kernel row-major
  then bias, split as numpy.array_split; the suite's default), "output_chunks" (kernel
  and bias split on k as torch.chunk does, FSDP2's Shard(0) of PyTorch's [k, d] weight)
  or "input_chunks" (kernel split on d, bias on k, by the same torch.chunk rule).
- `momentum`: the step also does SGD with momentum, with the options of a
  `MomentumSupport(dampening=..., nesterov=..., weight_decay=(...))` or a mapping with
  those keys: dampening (a dampening other than 0), nesterov, and the weight decay
  conventions taken, "coupled" and/or "decoupled". Undeclared, no step uses momentum;
- `adam`: the step also does Adam, with the options of an
  `AdamSupport(weight_decay=(...), eps_root=...)` or a mapping with those keys: the
  weight decay conventions taken, "coupled" (torch.optim.Adam) and/or "decoupled"
  (AdamW), and eps_root (an eps_root other than 0, as optax has). Undeclared, no step
  is an Adam step. With neither `momentum` nor `adam`, every step is plain SGD.

Momentum: with a `momentum` declaration, about half of the suite's cases are momentum
steps. Such a case has `case.optimizer`, an `Optimizer` (kind "momentum"; momentum,
dampening and weight_decay numpy float32 scalars; nesterov a bool; decay "coupled" or
"decoupled"; None for a plain SGD step), and `case.momentum_kernel` [d, k] and
`case.momentum_bias` [k], the buffer before the step (both None on the optimizer's first
step: fresh state). With g the gradient and p the parameter (exact arithmetic):
ge = g + weight_decay*p when coupled, else g; buffer' = ge when fresh (no dampening on
the first step, as torch.optim.SGD), else momentum*buffer + (1 - dampening)*ge;
direction = ge + momentum*buffer' with nesterov, else buffer'; p' = p - lr*direction
(coupled) or p - lr*(direction + weight_decay*p) (decoupled). The gradient reported is
that of the loss alone. The step returns "momentum_kernel" and "momentum_bias" too,
the buffer after the step. A momentum step outside the declared options is answered
with op "error" before `step` sees it.

Adam: with an `adam` declaration, the suite also sends Adam steps. Such a case has
`case.optimizer`, an `AdamOptimizer` (kind "adam"; b1, b2, eps, eps_root and
weight_decay numpy float32 scalars; decay "coupled" or "decoupled"),
`case.momentum_kernel` [d, k] and `case.momentum_bias` [k], the first moment m before
the step, and
`case.second_moment_kernel` [d, k] and `case.second_moment_bias` [k], the second moment
v before the step (all four None in fresh state, where the moments are zeros). With g
the gradient, p the parameter and t = case.step + 1 (the steps taken, this one
included), in exact arithmetic: ge = g + weight_decay*p when coupled, else g;
m' = b1*m + (1 - b1)*ge; v' = b2*v + (1 - b2)*ge**2; mh = m' / (1 - b1**t),
vh = v' / (1 - b2**t); a = mh / (sqrt(vh + eps_root) + eps); p' = p - lr*a (coupled) or
p - lr*(a + weight_decay*p) (decoupled). The gradient reported is that of the loss
alone. The step returns "momentum_kernel", "momentum_bias", "second_moment_kernel" and
"second_moment_bias" too, m' and v'. An Adam step outside the declared options (eps_root
other than 0 without eps_root, a weight decay other than 0 by an undeclared convention)
is answered with op "error" before `step` sees it. Tell the optimizers apart with
`isinstance(case.optimizer, AdamOptimizer)` (or `case.optimizer.kind`).

Adagrad: with an `adagrad` declaration ({"weight_decay": [...], "eps_root": bool}), the
suite also sends Adagrad steps. Such a case has `case.optimizer`, an `AdagradOptimizer`
(kind "adagrad"; eps, eps_root, initial_accumulator_value and weight_decay numpy float32
scalars; decay "coupled" or "decoupled") and `case.second_moment_kernel` [d, k] and
`case.second_moment_bias` [k], the sum of squared gradients before the step (None in
fresh state, where it is initial_accumulator_value). In exact arithmetic: ge as for Adam;
s' = s + ge**2; a = ge / (sqrt(s' + eps_root) + eps); p' as for Adam. The step returns
"second_moment_kernel" and "second_moment_bias", s'. torch's eps sits outside the root
(declare eps_root False: cases have eps_root 0), optax's inside (eps_root True: cases
have eps 0).

Batches: a step that is faster on many cases at once (one vectorised or compiled call)
is served with `serve(step_batch=fn, max_batch=M, ...)` instead of `step`. The suite
then may send up to M consecutive cases as one batch; `fn` receives them as a list of
Case and returns a list of the same length and order, each item the case's output dict
or an exception instance (not raised) that answers only that case with op "error", as a
raised one would. An exception raised by `fn` answers every case of the batch. A single
case arrives as a batch of one.

An adapter whose framework is not installed calls `skip(reason)` (or imports through
`require`), which exits with status 77 before the handshake; the suite then reports
the adapter as skipped, never as passed.

Stdout: the protocol owns the process's stdout. `serve` reserves it when it starts:
fd 1 is moved aside for protocol messages, and fd 1 and sys.stdout then point at
stderr, so a stray print (or a C library writing to stdout) cannot corrupt the stream.
Importing this package changes nothing; an adapter whose imports print to stdout calls
`reserve_stdout()` before them, and one that writes output of its own to the real stdout
(a dump instead of serving) writes it to the stream `reserve_stdout()` returns.

Other ways to serve: `serve_streams(reader, writer, step, ...)` serves one conversation
on any binary streams and returns; `Adapter(step, ...)` validates the declarations once
(`.serve()`, `.serve_streams(reader, writer)`). For pytest, the `sgdc` fixture (this
distribution's pytest plugin) runs the suite against a step function of the test
process: `sgdc.check(step, name=..., capabilities=...)`.

Besides the protocol's fields, the hello reply carries the additive fields of
docs/spec/protocol.md: "subnormals", "unit_roundoff", "sharded", "max_in_flight"
(the suite may send cases ahead of their answers: the kit reads and answers messages in
order), and as declared "max_shards", "max_batch", "counter", "placement",
"compute_format", "precision", "momentum", "adam", "recipe". When the suite offers binary
arrays, the kit accepts them ("array_encoding": "binary"): arrays then travel as raw
bytes after each line instead of base64 inside it, which the step never sees.
"""

from __future__ import annotations

import importlib
import os
import sys
from types import ModuleType
from typing import NoReturn, Unpack

from ._codec import (CAPABILITIES, DECAY_CONVENTIONS, F32LE, AdagradOptimizer, AdamOptimizer,
                     Arrays, Case,
                     Optimizer, StepOutput, build_result, decode, encode, parse_case, reference)
from ._codec import RejectCase as RejectCase
from ._serve import (COMPUTE_FORMATS, COUNTER_AT_END, COUNTER_LARGEST, MAX_IN_FLIGHT, PLACEMENTS,
                     PRECISION_DTYPES, PRECISION_KEYS, PROTOCOL, AdagradSupport, Adapter,
                     AdamSupport, BatchOutput, ComputeFormat, Declarations, MomentumSupport, Precision,
                     ProtocolError, Reader, StepBatchFn, StepFn, Writer, adagrad_declaration,
                     adam_declaration, check_declared, compute_format_declaration,
                     counter_declaration, momentum_declaration, precision_declaration,
                     reserve_stdout)

__all__ = [
    "CAPABILITIES", "COMPUTE_FORMATS", "COUNTER_AT_END", "COUNTER_LARGEST", "DECAY_CONVENTIONS",
    "F32LE", "MAX_IN_FLIGHT", "PLACEMENTS", "PRECISION_DTYPES", "PRECISION_KEYS", "PROTOCOL",
    "SKIPPED", "AdagradOptimizer", "AdagradSupport", "Adapter", "AdamOptimizer",
    "AdamSupport", "Arrays", "BatchOutput", "Case", "ComputeFormat", "Declarations",
    "MomentumSupport", "Optimizer", "Precision", "ProtocolError", "Reader", "RejectCase",
    "StepBatchFn", "StepFn", "StepOutput", "Writer", "adagrad_declaration", "adam_declaration",
    "build_result", "check_declared",
    "compilation_cache_dir", "compute_format_declaration", "counter_declaration", "decode",
    "enable_jax_compilation_cache", "encode", "momentum_declaration", "parse_case",
    "precision_declaration", "reference", "require",
    "reserve_stdout", "serve", "serve_streams", "skip",
]

__version__ = "0.1.0"

SKIPPED = 77  # exit status: this adapter cannot run here (its framework is missing)


def skip(reason: str) -> NoReturn:
    """Exit before the handshake with status 77: the suite reports the adapter as skipped."""
    print(f"adapter skipped: {reason}", file=sys.stderr)
    sys.exit(SKIPPED)


def require(*modules: str) -> list[ModuleType]:
    """Import each module by name, or skip(); returns the modules in order."""
    loaded = []
    for name in modules:
        try:
            loaded.append(importlib.import_module(name))
        except ImportError as e:
            skip(f"{name} is not installed ({e})")
    return loaded


def compilation_cache_dir(framework: str) -> str | None:
    """Where an adapter of a compiling framework (XLA, Inductor) keeps the programs it
    compiled, so that a later run loads them instead of compiling again: `framework`'s
    folder under $SGDC_CACHE_DIR, else under $XDG_CACHE_HOME/sgd-conformance (by default
    ~/.cache/sgd-conformance). None when SGDC_CACHE_DIR is "off": compile every time.
    The folder is made when missing."""
    root = os.environ.get("SGDC_CACHE_DIR", "")
    if root == "off":
        return None
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(xdg, "sgd-conformance")
    path = os.path.join(root, framework)
    os.makedirs(path, exist_ok=True)
    return path


def enable_jax_compilation_cache(jax: ModuleType) -> str | None:
    """Turns on JAX's persistent compilation cache in `compilation_cache_dir("jax")`, for
    every program however quickly it compiled (a run's are small and many), unless
    JAX_COMPILATION_CACHE_DIR already chooses one (JAX then follows its own settings).
    Returns the folder in use, None when off. A cached program is keyed by its HLO, the
    compiler's options and the JAX version: it is the program a compilation would give."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return os.environ["JAX_COMPILATION_CACHE_DIR"]
    path = compilation_cache_dir("jax")
    if path is not None:
        jax.config.update("jax_compilation_cache_dir", path)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return path


def serve(step: StepFn | None = None, *, step_batch: StepBatchFn | None = None,
          max_batch: int | None = None, name: str, version: str,
          **declarations: Unpack[Declarations]) -> NoReturn:
    """Run the protocol on stdin/stdout until "bye" or end of input, then exit 0.

    Give `step` (one case at a time) or `step_batch` with `max_batch` (lists of up to
    `max_batch` cases). Reserves stdout first (see `reserve_stdout`). Exits 1 when the
    input cannot be followed (a binary payload without a usable size, or cut short).
    `max_shards` (optional): the most shards the implementation can run, e.g. its device
    count; the suite then asks for no larger num_shards of its own choosing.
    `placement` (optional, with "shard_layout"): "flat", "output_chunks" or
    "input_chunks", the rule the reported "shards" follow. A bad declaration raises
    ValueError naming it, before anything is read."""
    Adapter(step, step_batch=step_batch, max_batch=max_batch, name=name, version=version,
            **declarations).serve()


def serve_streams(reader: Reader, writer: Writer, step: StepFn | None = None, *,
                  step_batch: StepBatchFn | None = None, max_batch: int | None = None,
                  name: str, version: str, **declarations: Unpack[Declarations]) -> None:
    """Serve one conversation on binary streams (`reader`: buffered, with readline and
    readinto; `writer`: write and flush) until "bye" or end of input, then return.
    Touches neither stdout nor the process's state. Raises ProtocolError when the input
    cannot be followed, OSError when the other side has gone."""
    Adapter(step, step_batch=step_batch, max_batch=max_batch, name=name, version=version,
            **declarations).serve_streams(reader, writer)
