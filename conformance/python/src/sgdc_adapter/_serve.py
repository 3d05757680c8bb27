"""The conversation: handshake, cases sent ahead, batches, binary payloads, answers."""

from __future__ import annotations

import io
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, TypedDict, TypeGuard, Union, cast

from ._codec import (CAPABILITIES, DECAY_CONVENTIONS, AdagradOptimizer, AdamOptimizer, Arrays, Case, Float32Array,
                     Message, RejectCase, StepOutput, build_result, parse_case)

PROTOCOL = 1
# Cases the suite may send before reading the first answer: messages are read and
# answered in order, whatever waits in the pipe.
MAX_IN_FLIGHT = 64
# The step counter's declarable types and their largest values (the hello's "counter").
COUNTER_LARGEST = {"int32": 2**31 - 1, "uint32": 2**32 - 1, "int64": 2**63 - 1,
                   "float32": 2**24, "float64": 2**53}
COUNTER_AT_END = ("wrap", "saturate")
# The placement rules a sharded implementation may declare for its "shards" layout
# (the hello's "placement"; docs/sharded.md): how the parameters are split over S shards.
PLACEMENTS = ("flat", "output_chunks", "input_chunks")

StepFn = Callable[[Case], StepOutput]
# One output per case, in order: a dict, or an exception instance that answers that case
# with op "error" (RejectCase or ValueError: its message; anything else: an internal error).
BatchOutput = Union[StepOutput, BaseException]
StepBatchFn = Callable[[list[Case]], Sequence[BatchOutput]]


class ProtocolError(Exception):
    """The input cannot be followed any further (a payload without a usable size, or cut
    short): the conversation ends."""


class Reader(Protocol):
    """What the kit reads messages from: a buffered binary stream."""

    def readline(self, size: int = -1, /) -> bytes: ...

    def readinto(self, buffer: memoryview, /) -> int | None: ...


class Writer(Protocol):
    """What the kit writes answers to: a binary stream."""

    def write(self, data: bytes, /) -> int | None: ...

    def flush(self) -> None: ...

    def fileno(self) -> int: ...


_JSON = json.JSONEncoder(separators=(",", ":"))  # made once: json.dumps with options makes one a call


class _Output:
    """Writes messages: a line, then the buffers of its payload; through one writev when
    the stream has a file descriptor (the reader then wakes once per message, and the
    arrays are not copied)."""

    def __init__(self, stream: Writer) -> None:
        self.stream = stream
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
            self.fd = None

    def send(self, obj: Message, payload: Iterable[Float32Array] = ()) -> None:
        parts = [memoryview(_JSON.encode(obj).encode("utf-8") + b"\n")]
        parts += [p.data.cast("B") for p in payload]
        self.stream.flush()
        if self.fd is None:
            for part in parts:
                self.stream.write(part.tobytes())
            self.stream.flush()
            return
        while parts:
            written = os.writev(self.fd, parts)
            while parts and written >= len(parts[0]):
                written -= len(parts[0])
                parts.pop(0)
            if parts:
                parts[0] = parts[0][written:]


def _read_payload(stream: Reader, size: int) -> bytearray:
    """Exactly `size` bytes from `stream`; ProtocolError when input ends first."""
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        n = stream.readinto(view[got:])
        if not n:
            raise ProtocolError(f"input ended {size - got} bytes before the end of a "
                                f"{size}-byte payload")
        got += n
    return buf


def counter_declaration(counter: object) -> dict[str, str]:
    """The hello's "counter" object for `counter` = (dtype, at_end); ValueError naming
    the bad value otherwise."""
    if not isinstance(counter, (tuple, list)) or len(counter) != 2:
        raise ValueError(f"counter must be a pair (dtype, at_end), e.g. ('int64', 'saturate'); "
                         f"got {counter!r}")
    dtype, at_end = counter
    if dtype not in COUNTER_LARGEST:
        raise ValueError(f"counter dtype {dtype!r} is not one of {', '.join(COUNTER_LARGEST)}")
    if at_end not in COUNTER_AT_END:
        raise ValueError(f"counter at_end {at_end!r} is not 'wrap' or 'saturate'")
    if dtype.startswith("float") and at_end != "saturate":
        raise ValueError(f"counter ({dtype!r}, {at_end!r}): a float counter stops at its "
                         f"largest value ({COUNTER_LARGEST[dtype]}); declare 'saturate'")
    return {"dtype": str(dtype), "at_end": str(at_end)}


@dataclass(frozen=True)
class MomentumSupport:
    """The `momentum` declaration: the step does SGD with momentum, with these options.

    `dampening`: it takes a dampening other than 0; `nesterov`: it takes Nesterov
    momentum; `weight_decay`: the decay conventions it takes ("coupled", "decoupled"),
    none when it takes no weight decay. The suite draws momentum steps only within them,
    and the kit rejects a step outside them (op "error") before the step function sees it."""

    dampening: bool = False
    nesterov: bool = False
    weight_decay: tuple[str, ...] = ()


def _declared_fields(what: str, value: object, cls: type,
                     keys: tuple[str, ...]) -> Mapping[str, Any]:
    """The declaration's fields: those of a `cls` instance, or a mapping with only `keys`."""
    if isinstance(value, cls):
        return {key: getattr(value, key) for key in keys}
    if isinstance(value, Mapping):
        unknown = [key for key in value if key not in keys]
        if unknown:
            raise ValueError(f"{what}: unknown key {unknown[0]!r}; the keys are "
                             f"{', '.join(keys)}")
        return value
    article = "an" if cls.__name__[0] in "AEIOU" else "a"
    raise ValueError(f"{what} must be {article} {cls.__name__} or a mapping with keys "
                     f"{', '.join(keys)}; got {value!r}")


def _flag(what: str, fields: Mapping[str, Any], key: str) -> bool:
    value = fields.get(key, False)
    if type(value) is not bool:
        raise ValueError(f"{what} {key} must be True or False, got {value!r}")
    return value


def _decay_conventions(what: str, decays: object) -> tuple[str, ...]:
    """The weight decay conventions declared, in the order coupled, decoupled."""
    if isinstance(decays, (str, bytes)) or not isinstance(decays, Iterable):
        raise ValueError(f"{what} weight_decay must be a collection of conventions, e.g. "
                         f"('coupled', 'decoupled'); got {decays!r}")
    listed = list(decays)
    for decay in listed:
        if decay not in DECAY_CONVENTIONS:
            raise ValueError(f"{what} weight_decay convention {decay!r} is not 'coupled' or "
                             f"'decoupled'")
        if listed.count(decay) > 1:
            raise ValueError(f"{what} weight_decay lists {decay!r} twice")
    return tuple(d for d in DECAY_CONVENTIONS if d in listed)


def momentum_declaration(momentum: object) -> MomentumSupport:
    """The MomentumSupport of `momentum` (a MomentumSupport, or a mapping with its keys
    "dampening", "nesterov", "weight_decay", each optional); ValueError naming the bad
    value otherwise. The conventions come back in the order coupled, decoupled."""
    fields = _declared_fields("momentum", momentum, MomentumSupport,
                              ("dampening", "nesterov", "weight_decay"))
    dampening = _flag("momentum", fields, "dampening")
    nesterov = _flag("momentum", fields, "nesterov")
    return MomentumSupport(dampening=dampening, nesterov=nesterov,
                           weight_decay=_decay_conventions("momentum",
                                                           fields.get("weight_decay", ())))


@dataclass(frozen=True)
class AdamSupport:
    """The `adam` declaration: the step also does Adam, with these options.

    `weight_decay`: the decay conventions it takes, "coupled" (torch.optim.Adam: the
    decay added to the gradient, before the moments) and/or "decoupled" (AdamW), none
    when it takes no weight decay; `eps_root`: it takes an eps_root other than 0 (inside
    the square root, as optax has it; torch has none). The suite draws Adam steps only
    within them, and the kit rejects a step outside them (op "error") before the step
    function sees it."""

    weight_decay: tuple[str, ...] = ()
    eps_root: bool = False


def adam_declaration(adam: object) -> AdamSupport:
    """The AdamSupport of `adam` (an AdamSupport, or a mapping with its keys
    "weight_decay", "eps_root", each optional); ValueError naming the bad value
    otherwise. The conventions come back in the order coupled, decoupled."""
    fields = _declared_fields("adam", adam, AdamSupport, ("weight_decay", "eps_root"))
    eps_root = _flag("adam", fields, "eps_root")
    return AdamSupport(weight_decay=_decay_conventions("adam", fields.get("weight_decay", ())),
                       eps_root=eps_root)


@dataclass(frozen=True)
class AdagradSupport:
    """The `adagrad` declaration: the step also does Adagrad, with these options.

    `weight_decay`: the decay conventions it takes, "coupled" (torch.optim.Adagrad, or
    optax's add_decayed_weights chained before adagrad) and/or "decoupled" (chained
    after it); `eps_root`: its epsilon sits inside the square root, as optax.adagrad's
    (cases then have eps 0 and eps_root above 0), not outside, as torch.optim.Adagrad's
    (eps above 0, eps_root 0). The suite draws Adagrad steps only within them, and the
    kit rejects a step outside them (op "error") before the step function sees it."""

    weight_decay: tuple[str, ...] = ()
    eps_root: bool = False


def adagrad_declaration(adagrad: object) -> AdagradSupport:
    """The AdagradSupport of `adagrad` (an AdagradSupport, or a mapping with its keys
    "weight_decay", "eps_root", each optional); ValueError naming the bad value otherwise."""
    fields = _declared_fields("adagrad", adagrad, AdagradSupport, ("weight_decay", "eps_root"))
    eps_root = _flag("adagrad", fields, "eps_root")
    return AdagradSupport(
        weight_decay=_decay_conventions("adagrad", fields.get("weight_decay", ())),
        eps_root=eps_root)


def _check_decay(weight_decay: Any, decay: str, declared: tuple[str, ...]) -> None:
    if weight_decay != 0 and decay not in declared:
        what = f"only {', '.join(declared)}" if declared else "no weight decay"
        raise RejectCase(f"decay: weight_decay {weight_decay!s} {decay}, but this adapter "
                         f"declared {what}")


def check_declared(case: Case, momentum: MomentumSupport | None,
                   adam: AdamSupport | None = None,
                   adagrad: AdagradSupport | None = None) -> None:
    """RejectCase naming the field when `case` asks for an optimizer option outside the
    declarations `momentum`, `adam` and `adagrad` (None: no such steps)."""
    o = case.optimizer
    if o is None:
        return
    if isinstance(o, AdagradOptimizer):
        if adagrad is None:
            raise RejectCase("optimizer: an Adagrad step, but this adapter declared no adagrad")
        if adagrad.eps_root and (o.eps != 0 or o.eps_root == 0):
            raise RejectCase(f"eps: {o.eps!s} outside the square root, but this adapter "
                             f"declared its Adagrad epsilon inside (eps_root)")
        if not adagrad.eps_root and o.eps_root != 0:
            raise RejectCase(f"eps_root: {o.eps_root!s}, but this adapter declared its Adagrad "
                             f"epsilon outside the square root (no eps_root)")
        _check_decay(o.weight_decay, o.decay, adagrad.weight_decay)
        return
    if isinstance(o, AdamOptimizer):
        if adam is None:
            raise RejectCase("optimizer: an Adam step, but this adapter declared no adam")
        if o.eps_root != 0 and not adam.eps_root:
            raise RejectCase(f"eps_root: {o.eps_root!s}, but this adapter declared no eps_root")
        _check_decay(o.weight_decay, o.decay, adam.weight_decay)
        return
    if momentum is None:
        raise RejectCase("optimizer: a momentum step, but this adapter declared no momentum")
    if o.dampening != 0 and not momentum.dampening:
        raise RejectCase(f"dampening: {o.dampening!s}, but this adapter declared no dampening")
    if o.nesterov and not momentum.nesterov:
        raise RejectCase("nesterov: true, but this adapter declared no Nesterov momentum")
    _check_decay(o.weight_decay, o.decay, momentum.weight_decay)


def _is_int(v: object) -> TypeGuard[int]:
    return type(v) is int  # JSON integers; bool is not one


COMPUTE_FORMATS = ("float32", "tf32", "bfloat16", "float16")
"""The compute formats known by name; any other is given as a mapping of fraction_bits,
min_exponent and max_exponent."""

ComputeFormat = Union[str, Mapping[str, int]]

PRECISION_KEYS = ("param_dtype", "reduce_dtype", "master_dtype")
"""The stages of a `precision` declaration, as FSDP2's MixedPrecisionPolicy names them
(master_dtype: the dtype the parameters and optimizer state are stored and updated in)."""
PRECISION_DTYPES = ("float32", "bfloat16", "float16")
"""The dtypes a `precision` stage may name."""

# A stage's dtype: its name, or a torch, NumPy or JAX dtype (or scalar type) of that name.
Precision = Mapping[str, Any]


class Declarations(TypedDict, total=False):
    """What an adapter declares besides its step: the keywords of `serve` after `name`
    and `version` (see the package's docstring), in one place for every entry point."""
    capabilities: Iterable[str]
    subnormals: str
    unit_roundoff: float | None
    compute_format: ComputeFormat | None
    precision: Precision | None
    sharded: bool
    max_shards: int | None
    counter: tuple[str, str] | None
    placement: str | None
    momentum: MomentumSupport | Mapping[str, Any] | None
    adam: AdamSupport | Mapping[str, Any] | None
    adagrad: AdagradSupport | Mapping[str, Any] | None
    recipe: Mapping[str, Any] | None


RECIPE_FIELDS = ("optimizers", "hyperparameters", "even_batches", "bias_group", "clipping")


def recipe_declaration(recipe: Mapping[str, Any]) -> dict[str, Any]:
    """The hello's "recipe" (docs/spec/protocol.md, "The declared recipe"): the optimizers
    run, a value or [lo, hi] per hyperparameter, even batches, the bias's parameter group
    ({"weight_decay": 0} for no decay on biases), global-norm clipping ({"max_norm": 1.0,
    "eps": 1e-6} for torch's clip_grad_norm_, "eps": 0 for optax's). Its fields are checked
    here; their values by the suite, whose handshake error names a bad one."""
    if not isinstance(recipe, Mapping):
        raise ValueError(f"recipe must be a mapping, got {recipe!r}")
    unknown = [k for k in recipe if k not in RECIPE_FIELDS]
    if unknown:
        raise ValueError(f"unknown recipe fields {unknown}; known: {list(RECIPE_FIELDS)}")
    out = dict(recipe)

    def values(table: Mapping[str, Any]) -> dict[str, Any]:
        return {str(k): [float(x) for x in v] if isinstance(v, (list, tuple)) else float(v)
                for k, v in dict(table).items()}

    for key in ("hyperparameters", "bias_group", "clipping"):
        if key in out:
            out[key] = values(out[key])
    if "optimizers" in out:
        out["optimizers"] = [str(o) for o in out["optimizers"]]
    return out


def compute_format_declaration(fmt: ComputeFormat) -> str | dict[str, int]:
    """The hello's "compute_format" for a name or a mapping; ValueError when malformed."""
    if isinstance(fmt, str):
        if fmt not in COMPUTE_FORMATS:
            raise ValueError(f"compute_format must be one of {', '.join(COMPUTE_FORMATS)} or "
                             f"a mapping of fraction_bits, min_exponent, max_exponent; got "
                             f"{fmt!r}")
        return fmt
    if not isinstance(fmt, Mapping):
        raise ValueError(f"compute_format must be a name or a mapping, got {fmt!r}")
    keys = ("fraction_bits", "min_exponent", "max_exponent")
    if set(fmt) != set(keys) or not all(_is_int(fmt[k]) for k in keys):
        raise ValueError(f"compute_format needs exactly the integers {', '.join(keys)}; got "
                         f"{dict(fmt)!r}")
    if not 1 <= fmt["fraction_bits"] <= 23 or not (
            -126 <= fmt["min_exponent"] < fmt["max_exponent"] <= 127):
        raise ValueError(f"compute_format {dict(fmt)!r} is not narrower than float32 "
                         f"(1 <= fraction_bits <= 23, -126 <= min_exponent < max_exponent "
                         f"<= 127)")
    return {k: int(fmt[k]) for k in keys}


def _dtype_name(value: object) -> object:
    """The name of a dtype given as a name, a torch.dtype (torch.bfloat16: "bfloat16"), a
    NumPy or ml_dtypes dtype (its .name) or a scalar type (np.float16, jnp.bfloat16: its
    __name__); anything else as it is. Imports no framework."""
    if isinstance(value, str):
        return value
    if type(value).__module__ == "torch" and type(value).__name__ == "dtype":
        return str(value).removeprefix("torch.")
    if isinstance(value, type):
        return value.__name__
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else value


def precision_declaration(precision: Precision) -> dict[str, str]:
    """The hello's "precision" (mixed precision by stage, as FSDP2's MixedPrecisionPolicy
    defines it): the keys given, each a dtype name ("float32", "bfloat16", "float16"),
    normalised from a torch, NumPy or JAX dtype of that name. Keys left out are not
    filled in (the suite's defaults: param_dtype float32, reduce_dtype the param_dtype,
    master_dtype float32). ValueError naming the bad key or dtype."""
    if not isinstance(precision, Mapping):
        raise ValueError(f"precision must be a mapping with keys {', '.join(PRECISION_KEYS)}; "
                         f"got {precision!r}")
    unknown = [key for key in precision if key not in PRECISION_KEYS]
    if unknown:
        raise ValueError(f"precision: unknown key {unknown[0]!r}; the keys are "
                         f"{', '.join(PRECISION_KEYS)}")
    out: dict[str, str] = {}
    for key in PRECISION_KEYS:  # in this order, whatever the mapping's
        if key not in precision:
            continue
        value = precision[key]
        name = _dtype_name(value)
        if name not in PRECISION_DTYPES:
            raise ValueError(f"precision.{key} must be one of {', '.join(PRECISION_DTYPES)}, "
                             f"got {value!r}")
        out[key] = str(name)
    return out


_FLOAT32_FORMAT = {"fraction_bits": 23, "min_exponent": -126, "max_exponent": 127}


class Adapter:
    """A step function with its declarations, validated: serves conversations.

    The keywords are those of `serve`; a bad one raises ValueError naming it."""

    def __init__(self, step: StepFn | None = None, *, step_batch: StepBatchFn | None = None,
                 max_batch: int | None = None, name: str, version: str,
                 capabilities: Iterable[str] = (), subnormals: str = "ieee",
                 unit_roundoff: float | None = None,
                 compute_format: ComputeFormat | None = None,
                 precision: Precision | None = None, sharded: bool = False,
                 max_shards: int | None = None,
                 counter: tuple[str, str] | None = None,
                 placement: str | None = None,
                 momentum: MomentumSupport | Mapping[str, Any] | None = None,
                 adam: AdamSupport | Mapping[str, Any] | None = None,
                 adagrad: AdagradSupport | Mapping[str, Any] | None = None,
                 recipe: Mapping[str, Any] | None = None) -> None:
        if (step is None) == (step_batch is None):
            raise ValueError("give exactly one of step (one case at a time) and step_batch "
                             "(a list of cases)")
        if step is not None and not callable(step):
            raise ValueError(f"step must be callable, got {step!r}")
        if step_batch is not None and not callable(step_batch):
            raise ValueError(f"step_batch must be callable, got {step_batch!r}")
        caps = [str(c) for c in capabilities]
        unknown = [c for c in caps if c not in CAPABILITIES]
        if unknown:
            raise ValueError(f"unknown capabilities {unknown}; known: {list(CAPABILITIES)}")
        if subnormals not in ("ieee", "ftz"):
            raise ValueError(f"subnormals must be 'ieee' or 'ftz', got {subnormals!r}")
        if unit_roundoff is not None and not 0 < float(unit_roundoff) < 1:
            raise ValueError(f"unit_roundoff must lie in (0, 1), got {unit_roundoff!r}")
        self.hello: Message = {
            "op": "hello", "protocol": PROTOCOL, "name": str(name), "version": str(version),
            "capabilities": caps, "subnormals": subnormals, "sharded": bool(sharded),
            "max_in_flight": MAX_IN_FLIGHT}
        # Undeclared, the unit roundoff is the compute format's own (float32's: 2^-24):
        # sent only without compute_format and precision, else left to the suite, which
        # knows their formats.
        if compute_format is not None:
            self.hello["compute_format"] = compute_format_declaration(compute_format)
        if precision is not None:
            self.hello["precision"] = precision_declaration(precision)
            fmt = self.hello.get("compute_format", "float32")
            if fmt not in ("float32", _FLOAT32_FORMAT):
                raise ValueError(f"precision and compute_format {fmt!r} are both declared: "
                                 f"with precision (the dtype of each stage), compute_format "
                                 f"must be float32 or left out")
        if unit_roundoff is not None or (compute_format is None and precision is None):
            self.hello["unit_roundoff"] = float(2**-24 if unit_roundoff is None else unit_roundoff)
        if max_shards is not None:
            if not _is_int(max_shards) or max_shards < 1:
                raise ValueError(f"max_shards must be a positive integer, got {max_shards!r}")
            self.hello["max_shards"] = max_shards
        if step_batch is not None:
            if max_batch is None:
                raise ValueError("serving step_batch needs max_batch, the most cases in one batch")
            if not _is_int(max_batch) or not 1 <= max_batch <= MAX_IN_FLIGHT:
                raise ValueError(f"max_batch must be an integer in 1..{MAX_IN_FLIGHT} "
                                 f"(max_in_flight), got {max_batch!r}")
            self.hello["max_batch"] = max_batch
        elif max_batch is not None and max_batch != 1:
            raise ValueError(f"max_batch {max_batch!r} needs step_batch: step takes one case "
                             f"at a time")
        if counter is not None:
            if "step_counter" not in caps:
                raise ValueError("counter is declared without the 'step_counter' capability")
            self.hello["counter"] = counter_declaration(counter)
        if placement is not None:
            if placement not in PLACEMENTS:
                raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, "
                                 f"got {placement!r}")
            if "shard_layout" not in caps:
                raise ValueError(f"placement {placement!r} is declared without the "
                                 f"'shard_layout' capability")
            self.hello["placement"] = placement
        self.momentum = None if momentum is None else momentum_declaration(momentum)
        if self.momentum is not None:
            self.hello["momentum"] = {"dampening": self.momentum.dampening,
                                      "nesterov": self.momentum.nesterov,
                                      "weight_decay": list(self.momentum.weight_decay)}
        self.adam = None if adam is None else adam_declaration(adam)
        if self.adam is not None:
            self.hello["adam"] = {"weight_decay": list(self.adam.weight_decay),
                                  "eps_root": self.adam.eps_root}
        self.adagrad = None if adagrad is None else adagrad_declaration(adagrad)
        if self.adagrad is not None:
            self.hello["adagrad"] = {"weight_decay": list(self.adagrad.weight_decay),
                                     "eps_root": self.adagrad.eps_root}
        if recipe is not None:
            self.hello["recipe"] = recipe_declaration(recipe)
        self.step = step
        self.step_batch = step_batch
        self.max_batch: int = max_batch if step_batch is not None and max_batch is not None else 1
        self.capabilities = tuple(caps)

    def serve_streams(self, reader: Reader, writer: Writer) -> None:
        """Serve one conversation on binary streams until "bye" or end of input.

        Raises ProtocolError when the input cannot be followed (after answering what
        it can), and OSError when the other side has gone while the kit writes."""
        _Conversation(self, reader, writer).run()

    def serve(self) -> NoReturn:
        """Serve the process's stdin/stdout (stdout reserved first), then exit: 0 at
        "bye" or end of input, 1 when the input could not be followed."""
        out = reserve_stdout()
        try:
            self.serve_streams(cast(Reader, sys.stdin.buffer), out)
        except ProtocolError as e:
            print(f"adapter: {e}", file=sys.stderr)
            sys.exit(1)
        except BrokenPipeError:
            print("adapter: the suite closed its end of the pipe", file=sys.stderr)
        sys.exit(0)


class _Conversation:
    """One conversation's state: the array encoding agreed, and the batch being read."""

    def __init__(self, adapter: Adapter, reader: Reader, writer: Writer) -> None:
        self.adapter = adapter
        self.reader = reader
        self.out = _Output(writer)
        self.binary = False  # agreed in the handshake: arrays as payload bytes after the line
        # The batch read so far: (id, the case or the message rejecting it).
        self.pending: list[tuple[Any, Case | str]] = []
        self.batch_size = 0

    def run(self) -> None:
        try:
            self._loop()
        finally:
            self._break_off("the input ended", quiet=True)

    def _loop(self) -> None:
        for line in iter(self.reader.readline, b""):
            if not line.strip():
                continue
            try:
                msg = json.loads(line)
                if not isinstance(msg, dict):
                    raise ValueError("a message must be a JSON object")
            except ValueError as e:
                self._break_off("a malformed message came")
                self.out.send({"op": "error", "id": None, "message": f"malformed message: {e}"})
                continue
            op = msg.get("op")
            if op == "step":
                payload = None
                if self.binary:
                    payload = self._payload(msg)
                self._step_message(msg, payload)
            elif op == "hello":
                self._break_off("a hello message came")
                offered = msg.get("array_encodings")
                self.binary = isinstance(offered, list) and "binary" in offered
                hello = self.adapter.hello
                self.out.send({**hello, "array_encoding": "binary"} if self.binary else hello)
            elif op == "bye":
                self._break_off("a bye message came")
                return
            else:
                self._break_off(f"a message with op {op!r} came")
                self.out.send({"op": "error", "id": msg.get("id"), "message": f"unknown op {op!r}"})

    def _payload(self, msg: Message) -> bytearray:
        size = msg.get("payload")
        if not _is_int(size) or size < 0:
            # Without its size the stream cannot be followed: answer, then stop.
            problem = f"payload: expected an integer >= 0, got {size!r}"
            self._break_off(f"the next step message's {problem}")
            self.out.send({"op": "error", "id": msg.get("id"), "message": problem})
            raise ProtocolError(problem)
        try:
            return _read_payload(self.reader, size)
        except ProtocolError:
            self._break_off("the input ended inside a payload", quiet=True)
            raise

    def _batch_fields(self, msg: Message) -> tuple[int, int]:
        """(batch_index, batch_size) of a step message, (0, 1) without them; RejectCase
        naming the problem when they are inconsistent."""
        index, size = msg.get("batch_index"), msg.get("batch_size")
        if index is None and size is None:
            return 0, 1
        if index is None or size is None:
            present, absent = ("batch_size", "batch_index") if index is None else (
                "batch_index", "batch_size")
            raise RejectCase(f"{present} without {absent}: a batch's messages carry both")
        if not _is_int(index) or index < 0:
            raise RejectCase(f"batch_index: expected an integer >= 0, got {index!r}")
        if not _is_int(size) or size < 1:
            raise RejectCase(f"batch_size: expected an integer >= 1, got {size!r}")
        if index >= size:
            raise RejectCase(f"batch_index {index} is not below batch_size {size}")
        if size > self.adapter.max_batch:
            raise RejectCase(f"batch_size {size} is above max_batch {self.adapter.max_batch}")
        return index, size

    def _step_message(self, msg: Message, payload: bytearray | None) -> None:
        mid = msg.get("id")
        try:
            index, size = self._batch_fields(msg)
        except RejectCase as e:
            self._break_off(f"the next step message (id {mid!r}) is not part of it: {e}")
            self.out.send({"op": "error", "id": mid, "message": str(e)})
            return
        if size == 1 and not self.pending:  # the common case, a batch of one: no lists
            try:
                case = self._parse(msg, payload)
            except RejectCase as e:
                self.out.send({"op": "error", "id": mid, "message": str(e)})
                return
            self._answer(mid, case, self._run_step([case])[0], set())
            return
        if self.pending and (size != self.batch_size or index != len(self.pending)):
            self._break_off(f"the next step message (id {mid!r}) has batch_index {index}, "
                            f"batch_size {size}" + ("" if "batch_index" in msg else
                                                    " (no batch fields)"))
        if not self.pending and index != 0:
            self.out.send({"op": "error", "id": mid, "message":
                           f"batch_index {index} (batch_size {size}) without the batch's "
                           f"earlier cases: a batch starts at batch_index 0"})
            return
        try:
            entry: Case | str = self._parse(msg, payload)
        except RejectCase as e:
            entry = str(e)
        self.pending.append((mid, entry))
        self.batch_size = size
        if index == size - 1:
            self._answer_batch()

    def _parse(self, msg: Message, payload: bytearray | None) -> Case:
        case = parse_case(msg, payload)
        check_declared(case, self.adapter.momentum, self.adapter.adam, self.adapter.adagrad)
        return case

    def _break_off(self, reason: str, quiet: bool = False) -> None:
        """Answer the cases of an unfinished batch with op "error": `reason` tells why."""
        if not self.pending:
            return
        pending, self.pending = self.pending, []
        message = (f"batch of {self.batch_size} cases broken off after {len(pending)}: {reason}")
        try:
            for mid, _ in pending:
                self.out.send({"op": "error", "id": mid, "message": message})
        except OSError:
            if not quiet:
                raise

    def _answer_batch(self) -> None:
        pending, self.pending = self.pending, []
        cases = [entry for _, entry in pending if isinstance(entry, Case)]
        outputs = self._run_step(cases)
        answers = iter(outputs)
        printed: set[int] = set()  # one exception raised for a whole batch: one traceback
        for mid, entry in pending:
            if isinstance(entry, str):
                self.out.send({"op": "error", "id": mid, "message": entry})
            else:
                self._answer(mid, entry, next(answers), printed)

    def _run_step(self, cases: list[Case]) -> list[BatchOutput]:
        """One output per case: the step's dict, or the exception that rejects the case."""
        step, step_batch = self.adapter.step, self.adapter.step_batch
        if step is not None:
            outputs: list[BatchOutput] = []
            for case in cases:
                try:
                    outputs.append(step(case))
                except Exception as e:  # noqa: BLE001 - answered as the case's error
                    outputs.append(e)
            return outputs
        if not cases:
            return []
        assert step_batch is not None
        try:
            result = list(step_batch(cases))
        except Exception as e:  # noqa: BLE001 - every case of the batch answers it
            return [e] * len(cases)
        if len(result) != len(cases):
            problem = TypeError(f"step_batch returned {len(result)} outputs for {len(cases)} cases")
            return [problem] * len(cases)
        return result

    def _answer(self, mid: Any, case: Case, out: BatchOutput, printed: set[int]) -> None:
        if not isinstance(out, BaseException):
            arrays = Arrays(binary=self.binary)
            try:
                res = build_result(case, out, self.adapter.capabilities, arrays)
            except Exception as e:  # noqa: BLE001 - a malformed output is the case's error
                out = e
            else:
                if arrays.binary:
                    res["payload"] = arrays.size
                self.out.send({"op": "result", "id": mid, **res}, arrays.payload())
                return
        self.out.send({"op": "error", "id": mid, "message": _error_message(out, printed)})


def _error_message(e: BaseException, printed: set[int]) -> str:
    """The op "error" message of an exception; its traceback goes to stderr (once: ids
    in `printed`) unless it is a RejectCase, a deliberate rejection."""
    if isinstance(e, RejectCase):
        return str(e) or type(e).__name__
    if id(e) not in printed:
        printed.add(id(e))
        traceback.print_exception(type(e), e, e.__traceback__, file=sys.stderr)
    if isinstance(e, ValueError):
        return str(e) or type(e).__name__
    return f"internal error: {type(e).__name__}: {e}"


_protocol_out: io.BufferedWriter | None = None
_reserve_lock = threading.Lock()


def reserve_stdout() -> io.BufferedWriter:
    """Keep the process's real stdout for protocol messages and return it as a binary stream.

    File descriptor 1 is moved aside (duplicated) for the protocol; fd 1 and sys.stdout
    then point at stderr, so a stray print, or a C library writing to fd 1, cannot
    corrupt the protocol stream. `serve` does this when it starts; call it yourself
    before importing a framework that prints at import, or to write something of your
    own to the real stdout (e.g. a dump before serving). Idempotent: later calls return
    the same stream."""
    global _protocol_out
    with _reserve_lock:
        if _protocol_out is None:
            sys.stdout.flush()
            _protocol_out = os.fdopen(os.dup(1), "wb")
            os.dup2(2, 1)
            sys.stdout = sys.stderr
        return _protocol_out
