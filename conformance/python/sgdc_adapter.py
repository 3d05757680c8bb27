"""Adapter side of the sgd-conformance protocol, version 1 (JSON Lines over stdio).

An adapter author writes one function and hands it to `serve`:

    import sgdc_adapter            # import this first: it reserves stdout
    import numpy as np

    def step(case):
        ...                        # case.n, .d, .k, .num_shards, .step, .lr, .kernel, .bias, .x, .y
        return {"loss": loss, "kernel": new_kernel, "bias": new_bias}

    sgdc_adapter.serve(step, name="my-impl", version="1.0", capabilities=("grads",))

`case.lr` is a numpy float32 scalar; kernel [d,k], bias [k], x [n,d] and y [n,k] are
writable float32 arrays. `step` returns float32 values: "loss" (scalar), "kernel",
"bias", and, as promised by `capabilities`, "grad_kernel" and "grad_bias" ("grads"),
"step" (an int, "step_counter"), "shards" (a list of {"kernel": int, "bias": int},
"shard_layout"). Raising `RejectCase` (or any `ValueError`) answers the case with
op "error" and the exception's message; any other exception also answers op "error"
and writes its traceback to stderr, so one bad case never kills the adapter.

Besides the protocol's fields, the hello reply carries additive fields: three that
describe the implementation, "subnormals" ("ieee", or "ftz" when subnormal inputs or
results may be flushed to zero), "unit_roundoff" (2**-24 for float32 arithmetic) and
"sharded" (whether the step really splits work over `num_shards`), and
"max_in_flight" (the suite may send cases ahead of their answers). When the suite
offers binary arrays, the kit accepts them ("array_encoding": "binary"): arrays then
travel as raw bytes after each line instead of base64 inside it, which the step never
sees (docs/protocol-extensions.md).

An adapter whose framework is not installed calls `skip(reason)` (or uses `require`),
which exits with status 77 before the handshake; the suite then reports the adapter
as skipped, never as passed.

Importing this module moves file descriptor 1 aside for the protocol and points
both sys.stdout and fd 1 at stderr, so a stray print (or a C library writing to
stdout) cannot corrupt the protocol stream.
"""

import base64
import importlib
import json
import math
import os
import sys
import traceback

SKIPPED = 77  # exit status: this adapter cannot run here (its framework is missing)


def skip(reason):
    """Exit before the handshake with status 77: the suite reports the adapter as skipped."""
    print(f"adapter skipped: {reason}", file=sys.stderr)
    sys.exit(SKIPPED)


def require(*modules):
    """Import each module by name, or skip(); returns the modules in order."""
    loaded = []
    for name in modules:
        try:
            loaded.append(importlib.import_module(name))
        except ImportError as e:
            skip(f"{name} is not installed ({e})")
    return loaded


np, = require("numpy")

PROTOCOL = 1
# Cases the suite may send before reading the first answer: messages are read and
# answered one at a time, in order, whatever waits in the pipe.
MAX_IN_FLIGHT = 64
CAPABILITIES = ("grads", "step_counter", "shard_layout")
F32LE = np.dtype("<f4")  # the protocol's element type (a dtype object: cheaper than "<f4" each time)

# Reserve the real stdout for protocol messages (bytes: lines and binary payloads);
# everything else that writes to stdout (print, C extensions) lands on stderr.
sys.stdout.flush()
_proto = os.fdopen(os.dup(1), "wb")
os.dup2(2, 1)
sys.stdout = sys.stderr


class RejectCase(ValueError):
    """Raise from `step` to decline a case; the message goes back as op "error"."""


class Case:
    """One decoded step request (see the module docstring for the attributes)."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self):
        return f"Case(n={self.n}, d={self.d}, k={self.k}, num_shards={self.num_shards}, step={self.step})"


def encode(values):
    """Base64 of little-endian float32, row-major. Requires float32 input: no silent casts."""
    arr = np.asarray(values)
    if arr.dtype != np.float32:
        raise TypeError(f"expected float32 values, got {arr.dtype}")
    return base64.b64encode(np.ascontiguousarray(arr, dtype=F32LE).tobytes()).decode("ascii")


def decode(text, count, what):
    """Decode a protocol array of exactly `count` float32 values."""
    if not isinstance(text, str):
        raise RejectCase(f"{what}: expected a base64 string")
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError) as e:
        raise RejectCase(f"{what}: bad base64 ({e})") from None
    if len(raw) != 4 * count:
        raise RejectCase(f"{what}: expected {count} float32 values, got {len(raw)} bytes")
    return np.frombuffer(raw, dtype=F32LE).astype(np.float32)  # astype copies: writable


def reference(ref, count, what, payload):
    """The `count` float32 values that a binary array reference {"offset", "count"} names
    in `payload` (a bytearray, so the array is writable; it shares the payload's memory)."""
    if not isinstance(ref, dict):
        raise RejectCase(f"{what}: expected a binary array reference {{offset, count}}")
    offset, size = ref.get("offset"), ref.get("count")
    if type(offset) is not int or type(size) is not int or offset < 0 or size < 0:  # bool: not int
        for name, v in (("offset", offset), ("count", size)):
            if type(v) is not int or v < 0:
                raise RejectCase(f"{what}.{name}: expected an integer >= 0, got {v!r}")
    if size != count:
        raise RejectCase(f"{what}: expected {count} float32 values, got {size}")
    if offset + 4 * count > len(payload):
        raise RejectCase(f"{what}: bytes {offset} to {offset + 4 * count} lie outside the "
                         f"{len(payload)}-byte payload")
    return np.frombuffer(payload, F32LE, count, offset)


def _int_field(msg, key, minimum):
    v = msg.get(key)
    if type(v) is not int or v < minimum:  # JSON integers are ints; bool is not one
        raise RejectCase(f"{key}: expected an integer >= {minimum}, got {v!r}")
    return v


def parse_case(msg, payload=None):
    """The Case of a step message; its arrays are base64, or with `payload` (binary
    arrays) references into it."""
    n, d, k = (_int_field(msg, key, 1) for key in ("n", "d", "k"))

    def array(key, count):
        if payload is None:
            return decode(msg.get(key), count, key)
        return reference(msg.get(key), count, key, payload)

    return Case(
        n=n, d=d, k=k,
        num_shards=_int_field(msg, "num_shards", 1),
        step=_int_field(msg, "step", 0),
        lr=array("lr", 1)[0],
        kernel=array("kernel", d * k).reshape(d, k),
        bias=array("bias", k),
        x=array("x", n * d).reshape(n, d),
        y=array("y", n * k).reshape(n, k),
    )


class Arrays:
    """Writes a message's arrays: base64 strings, or (binary) references into the
    payload it collects."""

    def __init__(self, binary=False):
        self.binary, self.parts, self.size = binary, [], 0

    def __call__(self, arr):
        if not self.binary:
            return encode(arr)
        if arr.dtype != np.float32:
            raise TypeError(f"expected float32 values, got {arr.dtype}")
        # Kept as arrays, not copied to bytes: _send hands them to the kernel directly.
        part = np.ascontiguousarray(arr, dtype=F32LE).reshape(-1)
        ref = {"offset": self.size, "count": part.size}
        self.parts.append(part)
        self.size += part.nbytes
        return ref

    def payload(self):
        """The payload's parts, in order (buffers: arrays or bytes)."""
        return self.parts


def _array_out(out, key, shape, arrays):
    if key not in out:
        raise TypeError(f"step() result lacks {key!r}")
    arr = np.asarray(out[key])
    size = math.prod(shape)
    if arr.size != size or (arr.ndim > 1 and arr.shape != shape):
        raise TypeError(f"step() result {key!r} has shape {arr.shape}, expected {shape}")
    return arrays(arr)


def build_result(case, out, capabilities, arrays=None):
    """Check `step`'s dict against the case and the promised capabilities; encode it,
    arrays in base64 or through `arrays` (an Arrays writer)."""
    arrays = arrays or Arrays()
    res = {
        "loss": _array_out(out, "loss", (1,), arrays),
        "kernel": _array_out(out, "kernel", (case.d, case.k), arrays),
        "bias": _array_out(out, "bias", (case.k,), arrays),
    }
    if "grads" in capabilities or "grad_kernel" in out:
        res["grad_kernel"] = _array_out(out, "grad_kernel", (case.d, case.k), arrays)
    if "grads" in capabilities or "grad_bias" in out:
        res["grad_bias"] = _array_out(out, "grad_bias", (case.k,), arrays)
    if "step_counter" in capabilities or "step" in out:
        s = out.get("step")
        if isinstance(s, np.integer):
            s = int(s)
        if not isinstance(s, int) or isinstance(s, bool):
            raise TypeError(f"step() result 'step' must be an int, got {s!r}")
        res["step"] = s
    if "shard_layout" in capabilities or "shards" in out:
        shards = out.get("shards")
        if not isinstance(shards, (list, tuple)):
            raise TypeError("step() result 'shards' must be a list")
        res["shards"] = [{"kernel": int(s["kernel"]), "bias": int(s["bias"])} for s in shards]
    return res


_JSON = json.JSONEncoder(separators=(",", ":"))  # made once: json.dumps with options makes one a call


def _send(obj, payload=()):
    """Writes `obj` as a line, then the buffers of `payload`, in one system call when the
    pipe has room (the reader then wakes once per message) and without copying them."""
    parts = [memoryview(_JSON.encode(obj).encode("utf-8") + b"\n")]
    parts += [memoryview(p).cast("B") for p in payload]
    _proto.flush()
    fd = _proto.fileno()
    while parts:
        written = os.writev(fd, parts)
        while parts and written >= len(parts[0]):
            written -= len(parts[0])
            parts.pop(0)
        if parts:
            parts[0] = parts[0][written:]


def _read_payload(stream, size):
    """Exactly `size` bytes from `stream` into a bytearray; EOFError when input ends first."""
    buf = bytearray(size)
    view, got = memoryview(buf), 0
    while got < size:
        n = stream.readinto(view[got:])
        if not n:
            raise EOFError(f"input ended {size - got} bytes before the end of a {size}-byte payload")
        got += n
    return buf


def handle(msg, step, hello, capabilities, payload=None):
    """Answer one decoded message; returns False when the adapter should exit. `payload`:
    the bytes after a step line when binary arrays were agreed, else None."""
    op = msg.get("op")
    if op == "hello":
        _send(hello)
    elif op == "bye":
        return False
    elif op == "step":
        mid = msg.get("id")
        try:
            case = parse_case(msg, payload)
            arrays = Arrays(binary=payload is not None)
            res = build_result(case, step(case), capabilities, arrays)
            if arrays.binary:
                res["payload"] = arrays.size
            _send({"op": "result", "id": mid, **res}, arrays.payload())
        except ValueError as e:  # RejectCase is a ValueError
            if not isinstance(e, RejectCase):
                traceback.print_exc(file=sys.stderr)
            _send({"op": "error", "id": mid, "message": str(e) or type(e).__name__})
        except Exception as e:  # noqa: BLE001 - an adapter bug must not end the run
            traceback.print_exc(file=sys.stderr)
            _send({"op": "error", "id": mid, "message": f"internal error: {type(e).__name__}: {e}"})
    else:
        _send({"op": "error", "id": msg.get("id"), "message": f"unknown op {op!r}"})
    return True


def serve(step, *, name, version, capabilities=(), subnormals="ieee", unit_roundoff=2**-24, sharded=False,
          max_shards=None):
    """Run the protocol on stdin/stdout until "bye" or end of input, then exit 0.

    `max_shards` (optional): the most shards the implementation can run, e.g. its device
    count; the suite then asks for no larger num_shards of its own choosing."""
    capabilities = list(capabilities)
    unknown = [c for c in capabilities if c not in CAPABILITIES]
    if unknown:
        raise ValueError(f"unknown capabilities {unknown}; known: {CAPABILITIES}")
    if subnormals not in ("ieee", "ftz"):
        raise ValueError("subnormals must be 'ieee' or 'ftz'")
    hello = {"op": "hello", "protocol": PROTOCOL, "name": str(name), "version": str(version),
             "capabilities": capabilities, "subnormals": subnormals,
             "unit_roundoff": float(unit_roundoff), "sharded": bool(sharded),
             "max_in_flight": MAX_IN_FLIGHT}
    if max_shards is not None:
        if not isinstance(max_shards, int) or max_shards < 1:
            raise ValueError("max_shards must be a positive integer")
        hello["max_shards"] = max_shards
    binary = False  # agreed in the handshake: arrays as payload bytes after the line
    stdin = sys.stdin.buffer
    for line in iter(stdin.readline, b""):
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise ValueError("a message must be a JSON object")
        except ValueError as e:
            _send({"op": "error", "id": None, "message": f"malformed message: {e}"})
            continue
        if msg.get("op") == "hello":
            offered = msg.get("array_encodings")
            binary = isinstance(offered, list) and "binary" in offered
            reply = {**hello, "array_encoding": "binary"} if binary else hello
            handle(msg, step, reply, capabilities)
            continue
        payload = None
        if binary and msg.get("op") == "step":
            size = msg.get("payload")
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                # Without its size the stream cannot be followed: answer, then stop.
                _send({"op": "error", "id": msg.get("id"),
                       "message": f"payload: expected an integer >= 0, got {size!r}"})
                sys.exit(1)
            try:
                payload = _read_payload(stdin, size)
            except EOFError as e:
                print(f"adapter: {e}", file=sys.stderr)
                sys.exit(1)
        if not handle(msg, step, hello, capabilities, payload):
            break
    sys.exit(0)
