#!/usr/bin/env python3
"""Checks the report examples of a Markdown file against the real output of the CLI.

    check_report_examples.py CLI DOC [--update]

Every fenced block whose info string holds `report-example:NAME` starts with a line
`$ sgd-conformance ARGS...`; the rest of the block is what the command prints (stdout and
stderr), then a last line `[exit N]`. This runs each command from the repository root
(`sgd-conformance` replaced by CLI) and compares, with the timings (`0.01s`, `in 0.2 s`)
written as `Ns` and the CLI's path as `sgd-conformance`: a difference fails, naming the example and the first differing line. With
--update it writes the real outputs into DOC instead. Python standard library only.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

FENCE = re.compile(r"^```text report-example:(\S+)\n(.*?)^```\n", re.S | re.M)
TIMES = [(re.compile(r"\b\d+\.\d+s\b"), "Ns"), (re.compile(r" in \d+\.\d+ s\b"), " in N s")]


def normalise(text: str) -> str:
    for pattern, replacement in TIMES:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def run(cli: str, root: str, command: str) -> str:
    words = shlex.split(command)
    if not words or words[0] != "sgd-conformance":
        raise SystemExit(f"an example's command must start with sgd-conformance: {command!r}")
    done = subprocess.run([cli, *words[1:]], cwd=root, capture_output=True, text=True, timeout=300)
    # Replay lines name the program as it was started: the command's own name here.
    output = (done.stdout + done.stderr).rstrip("\n").replace(cli, "sgd-conformance")
    return normalise(f"{output}\n[exit {done.returncode}]")


def main() -> int:
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    cli, doc = os.path.abspath(sys.argv[1]), sys.argv[2]
    update = "--update" in sys.argv[3:]
    # The repository root: the nearest folder above DOC that holds CMakeLists.txt.
    root = os.path.dirname(os.path.abspath(doc))
    while not os.path.exists(os.path.join(root, "CMakeLists.txt")) and os.path.dirname(root) != root:
        root = os.path.dirname(root)
    text = open(doc, encoding="utf-8").read()
    failures, found = [], 0

    def check(match: re.Match[str]) -> str:
        nonlocal found
        found += 1
        name, body = match.group(1), match.group(2)
        command = body.splitlines()[0]
        if not command.startswith("$ "):
            failures.append(f"{name}: the block does not start with '$ COMMAND'")
            return match.group(0)
        actual = run(cli, root, command[2:])
        if update:
            return f"```text report-example:{name}\n{command}\n{actual}\n```\n"
        expected = normalise("\n".join(body.splitlines()[1:]))
        if expected != actual:
            want, got = expected.splitlines(), actual.splitlines()
            at = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
            failures.append(f"{name} ({command[2:]}): line {at + 1} differs:\n"
                            f"  documented: {want[at] if at < len(want) else '(nothing)'}\n"
                            f"  real:       {got[at] if at < len(got) else '(nothing)'}")
        return match.group(0)

    new_text = FENCE.sub(check, text)
    if found == 0:
        print(f"{doc}: no report-example blocks", file=sys.stderr)
        return 1
    if update:
        with open(doc, "w", encoding="utf-8") as f:
            f.write(new_text)
        print(f"{doc}: {found} examples written")
        return 0
    for f in failures:
        print(f, file=sys.stderr)
    print(f"{doc}: {found} examples, {len(failures)} differ")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
