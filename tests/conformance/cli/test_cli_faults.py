#!/usr/bin/env python3
"""Faults are results, not crashes: the CLI against broken adapters.

    test_cli_faults.py CLI FAKE_ADAPTER PYTHON

Each case runs `CLI run --impl 'PYTHON FAKE_ADAPTER MODE'` and checks the exit status
(2: nothing could be tested; 1: a fault mid-run), that it returns promptly, that the
report names the case and the problem and keeps what was measured, and that no
adapter process is left running. Ends with an 'N passed, N failed' line.
"""

import json
import os
import xml.etree.ElementTree as ElementTree
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import shutil

CLI, SHARED_FAKE, PYTHON = sys.argv[1:4]
# The fake under a name of this run's own: other tests that run at the same time start the
# same fake, and "no adapter left running" must count only the ones started here.
_own_dir = tempfile.mkdtemp(prefix="cli-faults-")
FAKE = shutil.copy(SHARED_FAKE, os.path.join(_own_dir, "fake_adapter_cli_faults.py"))
results = {"passed": 0, "failed": 0}


def run(mode, *extra, pid_file=None):
    impl = f"{PYTHON} {FAKE} {mode}" + (f" {pid_file}" if pid_file else "")
    with tempfile.TemporaryDirectory() as tmp:
        report = os.path.join(tmp, "report.json")
        start = time.monotonic()
        p = subprocess.run([CLI, "run", "--impl", impl, "--json", report, *extra],
                           capture_output=True, text=True, timeout=120)
        elapsed = time.monotonic() - start
        data = json.load(open(report)) if os.path.exists(report) else None
    return p, elapsed, data


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead; it only waits for its parent.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except OSError:
        return False


def check(name, condition, detail=""):
    results["passed" if condition else "failed"] += 1
    print(f"{'ok  ' if condition else 'FAIL'} {name}" + ("" if condition else f": {detail}"))


def no_fake_left():
    out = subprocess.run(["pgrep", "-f", FAKE], capture_output=True, text=True).stdout.split()
    # This script's own command line names the fake too.
    return [pid for pid in out if int(pid) != os.getpid() and alive(int(pid))]


# Nothing could be tested: exit 2, promptly, saying why (the four runs side by side).
UNTESTABLE = [("bad_protocol", "protocol"), ("hello_not_json", "JSON"),
              ("exit_immediately", "status 3"), ("hang_in_handshake", "within")]
with ThreadPoolExecutor(len(UNTESTABLE)) as pool:
    # A second for the hang; more for the others, which answer at once but start a Python
    # interpreter that a loaded machine may take over a second to start.
    untestable = list(pool.map(
        lambda mode: run(mode, "--handshake-timeout", "1" if mode == "hang_in_handshake" else "8"),
        [mode for mode, _ in UNTESTABLE]))
for (mode, words), (p, t, _) in zip(UNTESTABLE, untestable):
    check(f"{mode}: exit 2", p.returncode == 2, f"exit {p.returncode}: {p.stderr}")
    check(f"{mode}: names the problem", words in p.stderr, p.stderr)
    check(f"{mode}: prompt", t < 20, f"{t:.1f} s")

p = subprocess.run([CLI, "run", "--impl", "/nonexistent/adapter --flag"], capture_output=True,
                   text=True, timeout=60)
check("missing command: exit 2", p.returncode == 2, f"exit {p.returncode}")
check("missing command: says so", "not found" in p.stderr, p.stderr)

# Crash mid-run: exit 1, the report keeps what was measured before.
p, t, data = run("crash_after_150")
check("crash: exit 1", p.returncode == 1, f"exit {p.returncode}")
props = {q["name"]: q for q in data["properties"]} if data else {}
check("crash: earlier property kept", props.get("accuracy", {}).get("verdict") == "pass"
      and props["accuracy"]["cases"] == 100, json.dumps(props.get("accuracy")))
fault = props.get("shard_invariance", {}).get("fault", "")
check("crash: fault names case and status", "exited with status 1" in fault
      and "crashing on case 151" in fault, fault)
check("crash: later properties not run",
      props.get("determinism", {}).get("verdict") == "not_run", json.dumps(props.get("determinism")))

# The JUnit report of a run with a fault is well-formed and names the failing property.
with tempfile.TemporaryDirectory() as tmp:
    junit = os.path.join(tmp, "junit.xml")
    subprocess.run([CLI, "run", "--impl", f"{PYTHON} {FAKE} crash_after_150", "--junit", junit],
                   capture_output=True, timeout=120)
    cases = ElementTree.parse(junit).getroot().findall(".//testcase")
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    check("junit: one testcase per property, the crash as failure",
          len(cases) >= 8 and "shard_invariance" in failed, f"{len(cases)} cases, failed {failed}")

# Hangs: the per-case timeout ends the run; no process survives, grandchildren included.
# The four runs wait out their timeouts side by side; pid files in this run's own
# directory, removed with it at the end.
HANGS = ["hang", "hang_ignore_term", "hang_no_read", "hang_grandchild"]


def pid_file_of(mode):
    return os.path.join(_own_dir, f"{mode}.pid")


with ThreadPoolExecutor(len(HANGS)) as pool:
    hung = dict(zip(HANGS, pool.map(
        lambda mode: run(mode, "--timeout", "1", pid_file=pid_file_of(mode)), HANGS)))
for mode in HANGS[:3]:
    p, t, data = hung[mode]
    check(f"{mode}: exit 1", p.returncode == 1, f"exit {p.returncode}: {p.stdout[-500:]}")
    check(f"{mode}: prompt", t < 15, f"{t:.1f} s")
    check(f"{mode}: fault reported", "FAULT" in p.stdout, p.stdout[-500:])

p, t, _ = hung["hang_grandchild"]
pid_file = pid_file_of("hang_grandchild")
grandchild = int(open(pid_file).read()) if os.path.exists(pid_file) else None
check("hang_grandchild: exit 1", p.returncode == 1, f"exit {p.returncode}")
check("hang_grandchild: grandchild stopped", grandchild is not None and not alive(grandchild),
      f"pid {grandchild}")

# Answers outside the protocol: exit 1 and the problem named.
for mode, words in [("noise", "not JSON"), ("wrong_id", "id"), ("short_array", "values"),
                    ("bad_base64", "base64"), ("step_string", "step"), ("step_nan", "JSON"),
                    ("step_float", "step"), ("missing_grad", "grad_bias"),
                    ("unterminated", "status 1")]:
    p, t, data = run(mode, "--timeout", "5")
    fault = next((q.get("fault", "") for q in (data or {}).get("properties", []) if q.get("fault")), "")
    check(f"{mode}: exit 1", p.returncode == 1, f"exit {p.returncode}")
    check(f"{mode}: names case and problem",
          "case 0 (message id 1)" in fault and words in fault, fault)

# Rejections are answers: every property fails with the adapter's message, no fault.
p, t, data = run("reject")
check("reject: exit 1", p.returncode == 1, f"exit {p.returncode}")
check("reject: counterexample, not fault",
      data and all("fault" not in q and "rejected a" in q["counterexample"]["message"]
                   for q in data["properties"] if q["verdict"] == "fail"), p.stdout[-400:])

# A recipe file (run --recipe) that cannot be used: exit 2, the file and the field named.
for text, words in [("{", "is not JSON"), ('{"optimizers": ["adamw"]}', "recipe.optimizers"),
                    ('{"hyperparameters": {"lr": [1, 0.5]}}', "recipe.lr: is an empty range"),
                    ('{"optimizers": ["sgd"], "hyperparameters": {"b1": 0.9}}',
                     "recipe.b1: no optimizer"),
                    ('{"even_batch": true}', "recipe.even_batch: is not a recipe field"),
                    ('{"bias_group": {}}', "recipe.bias_group: declares neither"),
                    ('{"bias_group": {"lr": -1}}', "recipe.bias_group.lr: -1 lies outside"),
                    ('{"clipping": {"max_norm": 0, "eps": 0}}',
                     "recipe.clipping.max_norm: 0 must be a normal float32 > 0"),
                    ('{"clipping": {"max_norm": 1}}', "recipe.clipping.eps: is missing")]:
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        f.write(text)
    p = subprocess.run([CLI, "run", "--recipe", f.name], capture_output=True, text=True,
                       timeout=60)
    os.unlink(f.name)
    check(f"recipe {text}: exit 2", p.returncode == 2, f"exit {p.returncode}")
    check(f"recipe {text}: names the problem", words in p.stderr, p.stderr)
p = subprocess.run([CLI, "run", "--recipe", "/nonexistent/recipe.json"], capture_output=True,
                   text=True, timeout=60)
check("recipe missing file: exit 2 and named",
      p.returncode == 2 and "/nonexistent/recipe.json" in p.stderr, p.stderr)

# A counterexample whose bias has a group of its own is saved as a version 2 fixture
# (the report kept whatever else could not be saved), and replays as it failed: against the
# step that ignores the group it fails again, against the one that honours it it passes.
with tempfile.TemporaryDirectory() as tmp:
    report = os.path.join(tmp, "report.json")
    saved = os.path.join(tmp, "saved")
    p = subprocess.run([CLI, "run", "--impl", "builtin:bias-group-ignored", "--json", report,
                        "--save-failures", saved], capture_output=True, text=True, timeout=120)
    check("grouped counterexample: the report is kept",
          os.path.exists(report) and "NOT CONFORMANT" in p.stdout, p.stdout[-400:])
    grouped = [os.path.join(saved, f) for f in sorted(os.listdir(saved))
               if "bias_group" in json.load(open(os.path.join(saved, f)))["inputs"]]
    check("grouped counterexample: saved as version 2",
          grouped and all(json.load(open(f))["version"] == 2 for f in grouped),
          p.stderr[-400:])
    for impl, want in (("builtin:bias-group-ignored", 1), ("builtin:no-decay-on-bias", 0)):
        q = subprocess.run([CLI, "fixtures", "check", "--impl", impl, *grouped],
                           capture_output=True, text=True, timeout=120)
        check(f"grouped counterexample: replayed against {impl}: exit {want}",
              q.returncode == want, q.stdout[-400:])

# fixtures check where no fixture lies inside what the implementation declares: nothing
# was tested, which is no pass (exit 2, said).
with tempfile.TemporaryDirectory() as tmp:
    g = subprocess.run([CLI, "fixtures", "generate", "--count", "2", "--optimizer", "adam",
                        "--out", tmp], capture_output=True, text=True, timeout=120)
    check("generate --optimizer adam: exit 0", g.returncode == 0, g.stderr)
    q = subprocess.run([CLI, "fixtures", "check", "--impl", "builtin:no-decay-on-bias", tmp],
                       capture_output=True, text=True, timeout=120)
    check("every fixture outside the declaration: n/a listed with the reason",
          q.stdout.count("outside the declared recipe") == 2, q.stdout[-400:])
    check("every fixture outside the declaration: exit 2 and said",
          q.returncode == 2 and "none of the 2 fixtures lies inside what it declares" in q.stderr,
          f"exit {q.returncode}: {q.stderr[-300:]}")

check("no adapter left running", not no_fake_left(), " ".join(no_fake_left()))
print(f"{results['passed']} passed, {results['failed']} failed")
shutil.rmtree(_own_dir, ignore_errors=True)
sys.exit(1 if results["failed"] else 0)
