"""Cases and results: decoding step messages, checking and encoding what `step` returns."""

from __future__ import annotations

import base64
import dataclasses
import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Union

import numpy as np
import numpy.typing as npt

F32LE = np.dtype("<f4")  # the protocol's element type (a dtype object: cheaper than "<f4" each time)
CAPABILITIES = ("grads", "step_counter", "shard_layout")
# Where the weight decay enters a momentum or Adam step: "coupled" (added to the gradient,
# so it enters the buffer or the moments, as torch.optim.SGD and torch.optim.Adam do) or
# "decoupled" (added to the direction: AdamW).
DECAY_CONVENTIONS = ("coupled", "decoupled")
# The step message's fields that only a momentum step carries (the last four an Adam
# step carries too).
MOMENTUM_FIELDS = ("momentum", "dampening", "nesterov", "weight_decay", "decay",
                   "momentum_kernel", "momentum_bias")
# The step message's fields that only an Adam step carries.
ADAM_FIELDS = ("b1", "b2", "eps", "eps_root", "second_moment_kernel", "second_moment_bias")
# The step message's fields that only an Adagrad step carries (with eps, eps_root,
# weight_decay, decay and, in carried state, second_moment_kernel and second_moment_bias).
ADAGRAD_FIELDS = ("initial_accumulator_value",)
# An Adam step's state before the step: the first moment m and the second moment v, all
# four present or (fresh state) all four absent.
ADAM_STATE = ("momentum_kernel", "momentum_bias", "second_moment_kernel", "second_moment_bias")

Float32Array = npt.NDArray[np.float32]
# The fields of one shard's layout in "shards": parameter elements, and the optimizer
# state's elements where the shard reports them.
SHARD_FIELDS = ("kernel", "bias", "state_kernel", "state_bias")

# What `step` returns for one case: "loss", "kernel", "bias", and as promised
# "grad_kernel", "grad_bias", "step", "shards", for a momentum step "momentum_kernel",
# "momentum_bias", and for an Adam step those and "second_moment_kernel",
# "second_moment_bias" (see the package docstring).
StepOutput = Mapping[str, Any]
# A JSON object as the protocol's messages carry it.
Message = dict[str, Any]
# A binary array reference, or a base64 string.
ArrayField = Union[dict[str, int], str]


class RejectCase(ValueError):
    """Raise from `step` to decline a case; the message goes back as op "error"."""


@dataclass(frozen=True)
class Optimizer:
    """The optimizer of a momentum step (`Case.optimizer`; None for plain SGD).

    With g the gradient and p the parameter, in exact arithmetic:
    ge = g + weight_decay*p when `decay` is "coupled", else g; the buffer after the step
    is ge on the optimizer's first step (fresh state: no dampening) and when momentum is 0
    (no buffer to dampen), else momentum*buffer + (1 - dampening)*ge; the direction is ge + momentum*buffer' with
    `nesterov`, else buffer'; p' = p - lr*direction ("coupled") or
    p - lr*(direction + weight_decay*p) ("decoupled")."""

    kind: Literal["momentum"]
    momentum: np.float32
    dampening: np.float32
    nesterov: bool
    weight_decay: np.float32
    decay: Literal["coupled", "decoupled"]


@dataclass(frozen=True)
class AdamOptimizer:
    """The optimizer of an Adam step (`Case.optimizer`).

    With g the gradient, p the parameter, m and v the moments before the step (zeros in
    fresh state) and t = step + 1, in exact arithmetic: ge = g + weight_decay*p when
    `decay` is "coupled", else g; m' = b1*m + (1 - b1)*ge; v' = b2*v + (1 - b2)*ge**2;
    mh = m' / (1 - b1**t), vh = v' / (1 - b2**t); a = mh / (sqrt(vh + eps_root) + eps);
    p' = p - lr*a ("coupled", torch.optim.Adam) or p - lr*(a + weight_decay*p)
    ("decoupled", AdamW)."""

    kind: Literal["adam"]
    b1: np.float32
    b2: np.float32
    eps: np.float32
    eps_root: np.float32
    weight_decay: np.float32
    decay: Literal["coupled", "decoupled"]


@dataclass(frozen=True)
class AdagradOptimizer:
    """The optimizer of an Adagrad step (`Case.optimizer`).

    With g the gradient, p the parameter and s the sum of squares before the step
    (`initial_accumulator_value` in fresh state), in exact arithmetic: ge = g +
    weight_decay*p when `decay` is "coupled", else g; s' = s + ge**2;
    a = ge / (sqrt(s' + eps_root) + eps); p' = p - lr*a ("coupled", torch.optim.Adagrad)
    or p - lr*(a + weight_decay*p) ("decoupled"). torch's eps sits outside the root
    (eps_root 0), optax's inside (eps 0)."""

    kind: Literal["adagrad"]
    eps: np.float32
    eps_root: np.float32
    initial_accumulator_value: np.float32
    weight_decay: np.float32
    decay: Literal["coupled", "decoupled"]


@dataclass(eq=False)
class Case:
    """One decoded step request.

    `lr` is a numpy float32 scalar; `kernel` [d, k], `bias` [k], `x` [n, d] and `y` [n, k]
    are writable float32 arrays; `step` is the step counter's value, a Python int (any
    size the declared counter allows).

    `optimizer` is None for plain SGD (p' = p - lr*g), the momentum step's Optimizer, or
    the Adam step's AdamOptimizer. With momentum, `momentum_kernel` [d, k] and
    `momentum_bias` [k] are the buffer before the step (writable float32 arrays), both
    None on the optimizer's first step (fresh state). With Adam, they are the first
    moment m before the step, and `second_moment_kernel` [d, k] and
    `second_moment_bias` [k] the second moment v; all four None in fresh state (the
    moments are then zeros). With Adagrad, `second_moment_kernel` and
    `second_moment_bias` are the sum of squares before the step (None in fresh state,
    where it is `initial_accumulator_value`) and the momentum fields stay None.

    `bias_lr` and `bias_weight_decay` (numpy float32 scalars, or None) are the bias's
    own learning rate and weight decay when the adapter declares a parameter group for
    it (recipe "bias_group"); None: the bias takes `lr` and the optimizer's
    weight_decay. `for_bias()` is the case the bias's group sees.

    `clip_max_norm` and `clip_eps` (numpy float32 scalars, or None) are the global-norm
    gradient clipping the adapter declares (recipe "clipping"): the optimizer reads the
    gradients times min(1, clip_max_norm / (norm + clip_eps)), norm over every gradient
    element; the gradients reported stay the loss's. None: no clipping."""

    n: int
    d: int
    k: int
    num_shards: int
    step: int
    lr: np.float32
    kernel: Float32Array
    bias: Float32Array
    x: Float32Array
    y: Float32Array
    optimizer: Optimizer | AdamOptimizer | AdagradOptimizer | None = None
    momentum_kernel: Float32Array | None = None
    momentum_bias: Float32Array | None = None
    second_moment_kernel: Float32Array | None = None
    second_moment_bias: Float32Array | None = None
    bias_lr: np.float32 | None = None
    bias_weight_decay: np.float32 | None = None
    clip_max_norm: np.float32 | None = None
    clip_eps: np.float32 | None = None

    def for_bias(self) -> Case:
        """This case with the bias group's lr and weight decay in place of the kernel's
        (docs/spec/step.md, "Parameter groups"): its bias outputs are this case's."""
        o = self.optimizer
        if self.bias_weight_decay is not None and o is not None:
            o = dataclasses.replace(o, weight_decay=self.bias_weight_decay)
        return dataclasses.replace(
            self, lr=self.lr if self.bias_lr is None else self.bias_lr, optimizer=o,
            bias_lr=None, bias_weight_decay=None)

    @property
    def fresh_state(self) -> bool:
        """True when the case carries no optimizer state (plain SGD, or a first step: no
        momentum buffer, no Adam moments)."""
        return self.momentum_kernel is None and self.second_moment_kernel is None

    def __repr__(self) -> str:
        o = self.optimizer
        if o is None:
            more = ""
        elif isinstance(o, AdagradOptimizer):
            more = (f", optimizer=adagrad(eps={o.eps!s}, eps_root={o.eps_root!s}, "
                    f"initial_accumulator_value={o.initial_accumulator_value!s}, "
                    f"weight_decay={o.weight_decay!s}, decay={o.decay}"
                    f"{', fresh' if self.fresh_state else ''})")
        elif isinstance(o, AdamOptimizer):
            more = (f", optimizer=adam(b1={o.b1!s}, b2={o.b2!s}, eps={o.eps!s}, "
                    f"eps_root={o.eps_root!s}, weight_decay={o.weight_decay!s}, decay={o.decay}"
                    f"{', fresh' if self.fresh_state else ''})")
        else:
            more = (f", optimizer={o.kind}(momentum={o.momentum!s}, dampening={o.dampening!s}, "
                    f"nesterov={o.nesterov}, weight_decay={o.weight_decay!s}, decay={o.decay}"
                    f"{', fresh' if self.fresh_state else ''})")
        if self.bias_lr is not None or self.bias_weight_decay is not None:
            more += (f", bias_group(lr={self.bias_lr!s}, "
                     f"weight_decay={self.bias_weight_decay!s})")
        if self.clip_max_norm is not None:
            more += f", clip(max_norm={self.clip_max_norm!s}, eps={self.clip_eps!s})"
        return (f"Case(n={self.n}, d={self.d}, k={self.k}, num_shards={self.num_shards}, "
                f"step={self.step}{more})")


def encode(values: npt.ArrayLike) -> str:
    """Base64 of little-endian float32, row-major. Requires float32 input: no silent casts."""
    arr = np.asarray(values)
    if arr.dtype != np.float32:
        raise TypeError(f"expected float32 values, got {arr.dtype}")
    return base64.b64encode(np.ascontiguousarray(arr, dtype=F32LE).tobytes()).decode("ascii")


def decode(text: object, count: int, what: str) -> Float32Array:
    """Decode a protocol array of exactly `count` float32 values (a base64 string)."""
    if not isinstance(text, str):
        raise RejectCase(f"{what}: expected a base64 string")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as e:
        raise RejectCase(f"{what}: bad base64 ({e})") from None
    if len(raw) != 4 * count:
        raise RejectCase(f"{what}: expected {count} float32 values, got {len(raw)} bytes")
    return np.frombuffer(raw, dtype=F32LE).astype(np.float32)  # astype copies: writable


def reference(ref: object, count: int, what: str, payload: bytearray) -> Float32Array:
    """The `count` float32 values that a binary array reference {"offset", "count"} names
    in `payload` (a bytearray, so the array is writable; it shares the payload's memory)."""
    if not isinstance(ref, dict):
        raise RejectCase(f"{what}: expected a binary array reference {{offset, count}}")
    offset, size = ref.get("offset"), ref.get("count")
    if type(offset) is not int or type(size) is not int or offset < 0 or size < 0:  # bool: not int
        for name, v in (("offset", offset), ("count", size)):
            if type(v) is not int or v < 0:
                raise RejectCase(f"{what}.{name}: expected an integer >= 0, got {v!r}")
    assert isinstance(offset, int) and isinstance(size, int)
    if size != count:
        raise RejectCase(f"{what}: expected {count} float32 values, got {size}")
    if offset + 4 * count > len(payload):
        raise RejectCase(f"{what}: bytes {offset} to {offset + 4 * count} lie outside the "
                         f"{len(payload)}-byte payload")
    return np.frombuffer(payload, F32LE, count, offset)


def int_field(msg: Mapping[str, Any], key: str, minimum: int) -> int:
    """The integer field `key` of a message, at least `minimum` (JSON integers of any size)."""
    v = msg.get(key)
    if type(v) is not int or v < minimum:  # JSON integers are ints; bool is not one
        raise RejectCase(f"{key}: expected an integer >= {minimum}, got {v!r}")
    return v


def parse_case(msg: Mapping[str, Any], payload: bytearray | None = None) -> Case:
    """The Case of a step message; its arrays are base64, or with `payload` (binary
    arrays) references into it."""
    n, d, k = (int_field(msg, key, 1) for key in ("n", "d", "k"))

    def array(key: str, count: int) -> Float32Array:
        if payload is None:
            return decode(msg.get(key), count, key)
        return reference(msg.get(key), count, key, payload)

    case = Case(
        n=n, d=d, k=k,
        num_shards=int_field(msg, "num_shards", 1),
        step=int_field(msg, "step", 0),
        lr=array("lr", 1)[0],
        kernel=array("kernel", d * k).reshape(d, k),
        bias=array("bias", k),
        x=array("x", n * d).reshape(n, d),
        y=array("y", n * k).reshape(n, k),
    )
    if "bias_lr" in msg:
        case.bias_lr = array("bias_lr", 1)[0]
    if ("clip_max_norm" in msg) != ("clip_eps" in msg):
        raise RejectCase("clip_max_norm and clip_eps: a clipped step carries both")
    if "clip_max_norm" in msg:
        case.clip_max_norm = array("clip_max_norm", 1)[0]
        case.clip_eps = array("clip_eps", 1)[0]
        if not (np.isfinite(case.clip_max_norm) and case.clip_max_norm > 0):
            raise RejectCase(f"clip_max_norm: must be finite and > 0, got {case.clip_max_norm}")
        if not (np.isfinite(case.clip_eps) and case.clip_eps >= 0):
            raise RejectCase(f"clip_eps: must be finite and >= 0, got {case.clip_eps}")
    kind = msg.get("optimizer", "sgd")
    if "bias_weight_decay" in msg:
        if kind == "sgd":
            raise RejectCase("bias_weight_decay in a plain SGD step: plain SGD takes no weight "
                             "decay")
        case.bias_weight_decay = array("bias_weight_decay", 1)[0]
    if kind == "sgd":  # plain SGD: an optimizer's fields have no meaning here
        extra = [key for key in MOMENTUM_FIELDS if key in msg]
        if extra:
            raise RejectCase(f"{extra[0]} without \"optimizer\": \"momentum\": only a momentum "
                             f"step carries it")
        extra = [key for key in ADAM_FIELDS if key in msg]
        if extra:
            raise RejectCase(f"{extra[0]} without \"optimizer\": \"adam\": only an Adam step "
                             f"carries it")
        extra = [key for key in ADAGRAD_FIELDS if key in msg]
        if extra:
            raise RejectCase(f"{extra[0]} without \"optimizer\": \"adagrad\": only an Adagrad "
                             f"step carries it")
        return case
    if kind == "adam":
        return _parse_adam(msg, case, array)
    if kind == "adagrad":
        return _parse_adagrad(msg, case, array)
    if kind != "momentum":
        raise RejectCase(f"optimizer: expected \"momentum\", \"adam\" or \"adagrad\" (or "
                         f"\"sgd\"), got {kind!r}")
    extra = [key for key in ADAM_FIELDS + ADAGRAD_FIELDS if key in msg]
    if extra:
        raise RejectCase(f"{extra[0]}: an Adam step's field, in a momentum step")
    for key in MOMENTUM_FIELDS[:5]:
        if key not in msg:
            raise RejectCase(f"{key}: missing; a momentum step carries momentum, dampening, "
                             f"nesterov, weight_decay and decay")
    nesterov = msg["nesterov"]
    if type(nesterov) is not bool:
        raise RejectCase(f"nesterov: expected true or false, got {nesterov!r}")
    decay = _decay(msg["decay"])
    case.optimizer = Optimizer(kind="momentum", momentum=array("momentum", 1)[0],
                               dampening=array("dampening", 1)[0], nesterov=nesterov,
                               weight_decay=array("weight_decay", 1)[0], decay=decay)
    has_kernel, has_bias = "momentum_kernel" in msg, "momentum_bias" in msg
    if has_kernel != has_bias:
        present, absent = (("momentum_kernel", "momentum_bias") if has_kernel else
                           ("momentum_bias", "momentum_kernel"))
        raise RejectCase(f"{present} without {absent}: the buffer before the step has both "
                         f"(neither on the optimizer's first step)")
    if has_kernel:
        case.momentum_kernel = array("momentum_kernel", d * k).reshape(d, k)
        case.momentum_bias = array("momentum_bias", k)
    return case


def _decay(decay: object) -> Literal["coupled", "decoupled"]:
    if decay == "coupled":
        return "coupled"
    if decay == "decoupled":
        return "decoupled"
    raise RejectCase(f"decay: expected \"coupled\" or \"decoupled\", got {decay!r}")


def _parse_adam(msg: Mapping[str, Any], case: Case,
                array: Callable[[str, int], Float32Array]) -> Case:
    """`case` with the Adam step's optimizer and moments of `msg`."""
    extra = [key for key in MOMENTUM_FIELDS[:3] if key in msg]
    if extra:
        raise RejectCase(f"{extra[0]}: a momentum step's field, in an Adam step")
    extra = [key for key in ADAGRAD_FIELDS if key in msg]
    if extra:
        raise RejectCase(f"{extra[0]}: an Adagrad step's field, in an Adam step")
    for key in ("b1", "b2", "eps", "eps_root", "weight_decay", "decay"):
        if key not in msg:
            raise RejectCase(f"{key}: missing; an Adam step carries b1, b2, eps, eps_root, "
                             f"weight_decay and decay")
    decay = _decay(msg["decay"])
    case.optimizer = AdamOptimizer(kind="adam", b1=array("b1", 1)[0], b2=array("b2", 1)[0],
                                   eps=array("eps", 1)[0], eps_root=array("eps_root", 1)[0],
                                   weight_decay=array("weight_decay", 1)[0], decay=decay)
    present = [key for key in ADAM_STATE if key in msg]
    if present and len(present) < len(ADAM_STATE):
        absent = [key for key in ADAM_STATE if key not in msg]
        raise RejectCase(f"{absent[0]}: missing, but {', '.join(present)} "
                         f"{'is' if len(present) == 1 else 'are'} sent: the moments before the "
                         f"step have all of {', '.join(ADAM_STATE)} (none in fresh state)")
    if present:
        d, k = case.d, case.k
        case.momentum_kernel = array("momentum_kernel", d * k).reshape(d, k)
        case.momentum_bias = array("momentum_bias", k)
        case.second_moment_kernel = array("second_moment_kernel", d * k).reshape(d, k)
        case.second_moment_bias = array("second_moment_bias", k)
    return case


def _parse_adagrad(msg: Mapping[str, Any], case: Case,
                   array: Callable[[str, int], Float32Array]) -> Case:
    """`case` with the Adagrad step's optimizer and sum of squares of `msg`."""
    extra = [key for key in ("momentum", "dampening", "nesterov", "b1", "b2", "momentum_kernel",
                             "momentum_bias") if key in msg]
    if extra:
        raise RejectCase(f"{extra[0]}: not an Adagrad step's field (Adagrad keeps one sum of "
                         f"squares, sent as second_moment_kernel and second_moment_bias)")
    for key in ("eps", "eps_root", "initial_accumulator_value", "weight_decay", "decay"):
        if key not in msg:
            raise RejectCase(f"{key}: missing; an Adagrad step carries eps, eps_root, "
                             f"initial_accumulator_value, weight_decay and decay")
    decay = _decay(msg["decay"])
    case.optimizer = AdagradOptimizer(
        kind="adagrad", eps=array("eps", 1)[0], eps_root=array("eps_root", 1)[0],
        initial_accumulator_value=array("initial_accumulator_value", 1)[0],
        weight_decay=array("weight_decay", 1)[0], decay=decay)
    has_kernel, has_bias = "second_moment_kernel" in msg, "second_moment_bias" in msg
    if has_kernel != has_bias:
        present, absent = (("second_moment_kernel", "second_moment_bias") if has_kernel else
                           ("second_moment_bias", "second_moment_kernel"))
        raise RejectCase(f"{present} without {absent}: the sum before the step has both "
                         f"(neither in fresh state)")
    if has_kernel:
        case.second_moment_kernel = array("second_moment_kernel", case.d * case.k).reshape(
            case.d, case.k)
        case.second_moment_bias = array("second_moment_bias", case.k)
    return case


class Arrays:
    """Writes a message's arrays: base64 strings, or (binary) references into the
    payload it collects."""

    def __init__(self, binary: bool = False) -> None:
        self.binary = binary
        self.parts: list[Float32Array] = []
        self.size = 0

    def __call__(self, arr: npt.NDArray[Any]) -> ArrayField:
        if not self.binary:
            return encode(arr)
        if arr.dtype != np.float32:
            raise TypeError(f"expected float32 values, got {arr.dtype}")
        # Kept as arrays, not copied to bytes: the writer hands them to the kernel directly.
        part = np.ascontiguousarray(arr, dtype=F32LE).reshape(-1)
        ref = {"offset": self.size, "count": int(part.size)}
        self.parts.append(part)
        self.size += part.nbytes
        return ref

    def payload(self) -> list[Float32Array]:
        """The payload's parts, in order (buffers)."""
        return self.parts


def _array_out(out: StepOutput, key: str, shape: tuple[int, ...], arrays: Arrays,
               why: str = "") -> ArrayField:
    if key not in out:
        raise TypeError(f"step() result lacks {key!r}{why}")
    arr = np.asarray(_exact_float32(out[key]))
    size = math.prod(shape)
    if arr.size != size or (arr.ndim > 1 and arr.shape != shape):
        raise TypeError(f"step() result {key!r} has shape {arr.shape}, expected {shape}")
    return arrays(arr)


def _exact_float32(value: object) -> object:
    """A Python float that is exactly a float32 value (`loss.item()` of a float32 loss:
    NaN and the infinities included) as that float32; anything else as it is, for the
    float32 check to accept or reject (a float that float32 cannot hold is not rounded
    silently)."""
    if type(value) is not float:
        return value
    with np.errstate(over="ignore"):
        single = np.float32(value)
    return single if float(single) == value or math.isnan(value) else value


def _step_out(s: object) -> int:
    """The reported counter as a Python int: ints of any size, numpy integers, and
    integral floats (a counter kept in float32 or float64)."""
    if isinstance(s, (np.integer, np.floating)):
        s = s.item()
    if isinstance(s, float) and math.isfinite(s) and s.is_integer():
        return int(s)
    if not isinstance(s, int) or isinstance(s, bool):
        raise TypeError(f"step() result 'step' must be an int (or an integral float), got {s!r}")
    return s


def build_result(case: Case, out: StepOutput, capabilities: Collection[str],
                 arrays: Arrays | None = None) -> Message:
    """Check `step`'s output against the case and the promised capabilities; encode it,
    arrays in base64 or through `arrays` (an Arrays writer). A momentum step's output
    must have "momentum_kernel" and "momentum_bias", the buffer after the step; an Adam
    step's those, the first moment after the step, and "second_moment_kernel" and
    "second_moment_bias", the second; a plain step's are not sent (nor a momentum
    step's second moment)."""
    if not isinstance(out, Mapping):
        raise TypeError(f"step() must return a dict, got {type(out).__name__}")
    arrays = arrays or Arrays()
    res: Message = {
        "loss": _array_out(out, "loss", (1,), arrays),
        "kernel": _array_out(out, "kernel", (case.d, case.k), arrays),
        "bias": _array_out(out, "bias", (case.k,), arrays),
    }
    if "grads" in capabilities or "grad_kernel" in out:
        res["grad_kernel"] = _array_out(out, "grad_kernel", (case.d, case.k), arrays)
    if "grads" in capabilities or "grad_bias" in out:
        res["grad_bias"] = _array_out(out, "grad_bias", (case.k,), arrays)
    if "step_counter" in capabilities or "step" in out:
        res["step"] = _step_out(out.get("step"))
    if "shard_layout" in capabilities or "shards" in out:
        shards = out.get("shards")
        if not isinstance(shards, (list, tuple)):
            raise TypeError("step() result 'shards' must be a list")
        # Each shard's parameter elements, and (protocol 1.6) its optimizer state's.
        res["shards"] = [{key: int(s[key]) for key in SHARD_FIELDS
                          if key in s or key in ("kernel", "bias")} for s in shards]
    if isinstance(case.optimizer, AdamOptimizer):
        for key, what in (("momentum", "first"), ("second_moment", "second")):
            why = f", which an Adam step returns (the {what} moment after the step)"
            res[key + "_kernel"] = _array_out(out, key + "_kernel", (case.d, case.k), arrays, why)
            res[key + "_bias"] = _array_out(out, key + "_bias", (case.k,), arrays, why)
    elif isinstance(case.optimizer, AdagradOptimizer):
        why = ", which an Adagrad step returns (the sum of squares after the step)"
        res["second_moment_kernel"] = _array_out(out, "second_moment_kernel", (case.d, case.k),
                                                 arrays, why)
        res["second_moment_bias"] = _array_out(out, "second_moment_bias", (case.k,), arrays, why)
    elif case.optimizer is not None:
        why = ", which a momentum step returns (the buffer after the step)"
        res["momentum_kernel"] = _array_out(out, "momentum_kernel", (case.d, case.k), arrays, why)
        res["momentum_bias"] = _array_out(out, "momentum_bias", (case.k,), arrays, why)
    return res
