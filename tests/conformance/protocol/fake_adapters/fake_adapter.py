"""Fake protocol v1 adapters for the protocol client's tests (Python 3 stdlib only).

Usage: python3 fake_adapter.py MODE [PID_FILE]

The well-behaved modes compute the step in float32 (each operation rounded with
struct), so the worked example of docs/spec/step.md comes out exactly. Every other
mode breaks the protocol in one way, named by MODE:

  good               correct; all capabilities; the Python kit's extension fields
  minimal            correct; no capabilities, no extension fields
  reject             answers every case with op "error"
  stderr_chatter     correct, after writing 1 MiB to stderr for every case
  bad_protocol       hello reply says protocol 2
  hello_not_json     hello reply is not JSON
  exit_immediately   exits with status 3 before reading anything
  hang_in_handshake  never answers hello
  crash_after_N      answers N cases (e.g. crash_after_2), then exits with status 1
  hang               never answers a case
  hang_ignore_term   never answers a case, ignores SIGTERM, writes its pid to PID_FILE
  hang_no_read       after the handshake, stops reading stdin
  hang_grandchild    starts a sleeping grandchild, writes its pid to PID_FILE, hangs
  noise              writes a log line to stdout before the answer
  wrong_id           answers with id + 1
  short_array        kernel has one value too few
  bad_base64         kernel is not valid base64
  step_string        step is the string "1"
  step_nan           step is the (non-JSON) literal NaN
  step_float         step is 1.5
  missing_grad       promises grads, leaves out grad_bias
  unterminated       writes half an answer without a newline and exits with status 1
  binary             correct; accepts binary arrays when the suite offers them
  binary_unoffered   chooses binary arrays even when the suite did not offer them
  binary_outside     binary: kernel's reference points past the end of the payload
  binary_string      binary: kernel is a base64 string instead of a reference
  binary_cut         binary: announces 64 more payload bytes than it writes, exits with status 1
  binary_stall       binary: announces 64 more payload bytes than it writes, then hangs
  pipelined[_MODE]   declares max_in_flight 8, then behaves as MODE (default good)
  batched[_MODE]     declares max_batch 4 and max_in_flight 8, reads each batch whole
                     (answering op "error" to every case of an inconsistent one), appends
                     each batch's size to PID_FILE when given, then behaves as MODE
  sleeper            (internal) the grandchild of hang_grandchild
"""

import base64
import json
import math
import os
import signal
import struct
import subprocess
import sys
import time

FOREVER = 3600


def f32(x):
    try:
        return struct.unpack("<f", struct.pack("<f", x))[0]
    except OverflowError:  # rounds beyond float32's range: infinity, as float32 arithmetic gives
        return math.copysign(math.inf, x)


def decode(text):
    raw = base64.b64decode(text, validate=True)
    return list(struct.unpack("<%df" % (len(raw) // 4), raw))


def encode(values):
    return base64.b64encode(struct.pack("<%df" % len(values), *values)).decode("ascii")


ARRAYS = ("lr", "kernel", "bias", "x", "y", "loss", "grad_kernel", "grad_bias")


def send(obj, payload=b""):
    sys.stdout.buffer.write(json.dumps(obj).encode() + b"\n" + payload)
    sys.stdout.buffer.flush()


def from_payload(msg, payload):
    """The message with its binary array references replaced by base64 strings."""
    out = dict(msg)
    for key in ARRAYS:
        if isinstance(msg.get(key), dict):
            o, c = msg[key]["offset"], msg[key]["count"]
            out[key] = base64.b64encode(payload[o:o + 4 * c]).decode("ascii")
    return out


def to_payload(msg):
    """The message with its base64 arrays moved into a binary payload."""
    out, payload = dict(msg), b""
    for key in ARRAYS:
        if isinstance(msg.get(key), str):
            raw = base64.b64decode(msg[key])
            out[key] = {"offset": len(payload), "count": len(raw) // 4}
            payload += raw
    out["payload"] = len(payload)
    return out, payload


def split(total, parts):
    return [total // parts + (1 if s < total % parts else 0) for s in range(parts)]


def sgd_step(msg):
    """One plain SGD step of y = x @ W + b with mean-squared error, in float32."""
    n, d, k = msg["n"], msg["d"], msg["k"]
    lr = decode(msg["lr"])[0]
    w, b, x, y = (decode(msg[key]) for key in ("kernel", "bias", "x", "y"))
    r = [0.0] * (n * k)
    for i in range(n):
        for j in range(k):
            acc = 0.0
            for t in range(d):
                acc = f32(acc + f32(x[i * d + t] * w[t * k + j]))
            r[i * k + j] = f32(f32(acc + b[j]) - y[i * k + j])
    count = n * k
    loss = 0.0
    for v in r:
        loss = f32(loss + f32(v * v))
    loss = f32(loss / count)
    scale = f32(2.0 / count)
    gw = [0.0] * (d * k)
    for t in range(d):
        for j in range(k):
            acc = 0.0
            for i in range(n):
                acc = f32(acc + f32(x[i * d + t] * r[i * k + j]))
            gw[t * k + j] = f32(scale * acc)
    gb = [0.0] * k
    for j in range(k):
        acc = 0.0
        for i in range(n):
            acc = f32(acc + r[i * k + j])
        gb[j] = f32(scale * acc)
    kernel = [f32(w[i] - f32(lr * gw[i])) for i in range(d * k)]
    bias = [f32(b[j] - f32(lr * gb[j])) for j in range(k)]
    shards = [{"kernel": kc, "bias": bc}
              for kc, bc in zip(split(d * k, msg["num_shards"]), split(k, msg["num_shards"]))]
    return {"op": "result", "id": msg["id"], "loss": encode([loss]), "kernel": encode(kernel),
            "bias": encode(bias), "step": msg["step"] + 1, "grad_kernel": encode(gw),
            "grad_bias": encode(gb), "shards": shards}


def write_pid(pid):
    """Writes `pid` to PID_FILE (argv[2]) atomically, so a reader never sees half."""
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(pid))
    os.replace(tmp, sys.argv[2])


def hello(mode, offered, pipelined=False, batched=False):
    if mode == "hang_in_handshake":
        time.sleep(FOREVER)
    if mode == "hello_not_json":
        sys.stdout.write("hello there\n")
        sys.stdout.flush()
        return
    reply = {"op": "hello", "protocol": 2 if mode == "bad_protocol" else 1,
             "name": "fake-" + mode, "version": "0.1",
             "capabilities": [] if mode == "minimal" else ["grads", "step_counter", "shard_layout"]}
    if mode != "minimal":
        reply.update({"subnormals": "ieee", "unit_roundoff": 2.0 ** -24, "sharded": False})
    if pipelined or batched:
        reply["max_in_flight"] = 8
    if batched:
        reply["max_batch"] = 4
    binary = mode == "binary_unoffered" or (mode.startswith("binary") and "binary" in offered)
    if binary:
        reply["array_encoding"] = "binary"
    send(reply)
    return binary


def answer(mode, msg, count, binary):
    if mode.startswith("crash_after_") and count == int(mode[len("crash_after_"):]) + 1:
        sys.stderr.write(f"fake: crashing on case {count}\n")
        sys.exit(1)
    if mode in ("hang", "hang_ignore_term"):
        time.sleep(FOREVER)
    if mode == "hang_grandchild":
        child = subprocess.Popen([sys.executable, os.path.abspath(__file__), "sleeper"])
        write_pid(child.pid)
        time.sleep(FOREVER)
    if mode == "reject":
        send({"op": "error", "id": msg["id"], "message": "fake: rejecting every case"})
        return
    if mode == "unterminated":
        sys.stdout.write('{"op":"result","id":')
        sys.stdout.flush()
        sys.exit(1)
    if mode == "stderr_chatter":
        for i in range(16384):
            sys.stderr.write("chatter line %05d: %s\n" % (i, "x" * 40))
        sys.stderr.write("chatter end of case %d\n" % count)
        sys.stderr.flush()
    if mode == "noise":
        print("loading weights...", flush=True)
    res = sgd_step(msg)
    if mode == "minimal":
        for key in ("step", "grad_kernel", "grad_bias", "shards"):
            del res[key]
    elif mode == "wrong_id":
        res["id"] += 1
    elif mode == "short_array":
        res["kernel"] = encode(decode(res["kernel"])[:-1])
    elif mode == "bad_base64":
        res["kernel"] = "AAAAP!=="
    elif mode == "step_string":
        res["step"] = str(res["step"])
    elif mode == "step_nan":
        res["step"] = float("nan")
    elif mode == "step_float":
        res["step"] = 1.5
    elif mode == "missing_grad":
        del res["grad_bias"]
    if not binary:
        send(res)
        return
    res, payload = to_payload(res)
    if mode == "binary_outside":
        res["kernel"]["offset"] = len(payload)
    elif mode == "binary_string":
        res["kernel"] = encode([0.5])
    elif mode in ("binary_cut", "binary_stall"):
        res["payload"] += 64
        send(res, payload)
        if mode == "binary_stall":
            time.sleep(FOREVER)
        sys.exit(1)
    send(res, payload)


def main():
    mode = sys.argv[1]
    if mode == "sleeper":
        time.sleep(FOREVER)
        return
    if mode == "hang_ignore_term":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        write_pid(os.getpid())
    if mode == "exit_immediately":
        sys.stderr.write("fake: exiting at once\n")
        sys.exit(3)
    pipelined = mode.startswith("pipelined")
    batched = mode.startswith("batched")
    for prefix in ("pipelined", "batched"):
        if mode.startswith(prefix):
            mode = mode[len(prefix) + 1:] or "good"
    count, binary, batch = 0, False, []
    for line in sys.stdin.buffer:
        msg = json.loads(line)
        if msg["op"] == "hello":
            binary = hello(mode, msg.get("array_encodings", []), pipelined, batched)
            if mode == "hang_no_read":
                time.sleep(FOREVER)
        elif msg["op"] == "bye":
            break
        elif msg["op"] == "step":
            if binary:
                msg = from_payload(msg, sys.stdin.buffer.read(msg["payload"]))
            if not batched:
                count += 1
                answer(mode, msg, count, binary)
                continue
            batch.append(msg)
            size = msg.get("batch_size", 1)
            if msg.get("batch_index", 0) < size - 1:
                continue  # the rest of the batch first
            if len(sys.argv) > 2:
                with open(sys.argv[2], "a") as log:
                    log.write(f"{len(batch)}\n")
            good = size <= 4 and [m.get("batch_index", 0) for m in batch] == list(range(size)) and \
                all(m.get("batch_size", 1) == size for m in batch)
            for m in batch:
                count += 1
                if good:
                    answer(mode, m, count, binary)
                else:
                    send({"op": "error", "id": m["id"], "message": "fake: inconsistent batch"})
            batch = []
    sys.exit(0)


if __name__ == "__main__":
    main()
