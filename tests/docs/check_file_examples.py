#!/usr/bin/env python3
"""Checks that the code a Markdown file shows as a file is that file, and that ctest runs it.

    check_file_examples.py DOC [--ctest CTEST BUILD_DIR] [--update]

A fenced block that follows a line `<!-- file-example: PATH -->` (PATH relative to the
repository root) must hold PATH's text byte for byte: a difference fails, naming the
example and the first differing line. With --ctest, PATH must also appear in the command
of a test that `CTEST --show-only=json-v1` lists in BUILD_DIR, so that what the document
shows is what the tests run. With --update it writes each file's text into DOC instead.
Python standard library only.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

MARKER = re.compile(r"^<!-- file-example: (\S+) -->\n", re.M)
BLOCK = re.compile(r"(```[\w-]*\n)(.*?)^```\n", re.S | re.M)


def repository_root(doc: str) -> str:
    """The nearest folder above DOC that holds CMakeLists.txt."""
    root = os.path.dirname(os.path.abspath(doc))
    while not os.path.exists(os.path.join(root, "CMakeLists.txt")) and os.path.dirname(root) != root:
        root = os.path.dirname(root)
    return root


def tests_running(ctest: str, build_dir: str) -> dict[str, str]:
    """Each test's name to its command line, as ctest lists them."""
    listed = subprocess.run([ctest, "--show-only=json-v1"], cwd=build_dir, capture_output=True,
                            text=True, timeout=120, check=True)
    return {t["name"]: " ".join(t.get("command", [])) for t in json.loads(listed.stdout)["tests"]}


def first_difference(shown: str, actual: str) -> str:
    want, got = actual.splitlines(), shown.splitlines()
    at = next((i for i, (a, b) in enumerate(zip(want, got)) if a != b), min(len(want), len(got)))
    if at == len(want) == len(got):  # the same lines: the line endings differ
        return "the same lines, other line endings or a missing last newline"
    return (f"line {at + 1} differs:\n"
            f"  file:     {want[at] if at < len(want) else '(nothing)'}\n"
            f"  document: {got[at] if at < len(got) else '(nothing)'}")


def main() -> int:
    args = sys.argv[1:]
    update = "--update" in args
    args = [a for a in args if a != "--update"]
    ctest: tuple[str, str] | None = None
    if "--ctest" in args:
        at = args.index("--ctest")
        if len(args) < at + 3:
            print(__doc__, file=sys.stderr)
            return 2
        ctest = (args[at + 1], args[at + 2])
        del args[at:at + 3]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    doc = args[0]
    root = repository_root(doc)
    text = open(doc, encoding="utf-8", newline="").read()
    tests = tests_running(*ctest) if ctest else {}
    failures: list[str] = []
    pieces: list[str] = []
    done = 0
    found = list(MARKER.finditer(text))
    for marker in found:
        path = marker.group(1)
        block = BLOCK.match(text, marker.end())
        if block is None:
            failures.append(f"{path}: the marker is not followed at once by a fenced block")
            continue
        try:
            actual = open(os.path.join(root, path), encoding="utf-8", newline="").read()
        except OSError as e:
            failures.append(f"{path}: {e.strerror}")
            continue
        pieces += [text[done:block.start(2)], actual if update else block.group(2)]
        done = block.end(2)
        if not update and block.group(2) != actual:
            failures.append(f"{path}: {first_difference(block.group(2), actual)}")
        if ctest:
            runners = sorted(name for name, command in tests.items()
                             if os.path.join(root, path) in command)
            if not runners:
                failures.append(f"{path}: no test in {ctest[1]} runs it")
            else:
                print(f"{path}: run by {', '.join(runners)}")
    pieces.append(text[done:])
    if not found:
        print(f"{doc}: no file-example blocks", file=sys.stderr)
        return 1
    if update:
        with open(doc, "w", encoding="utf-8", newline="") as f:
            f.write("".join(pieces))
        print(f"{doc}: {len(found)} examples written")
    for failure in failures:
        print(failure, file=sys.stderr)
    print(f"{doc}: {len(found)} file examples, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
