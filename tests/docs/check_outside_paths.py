#!/usr/bin/env python3
"""Fails when a file of the repository cites a path outside it.

    check_outside_paths.py ROOT

Checks every file that git tracks under ROOT (every file under it, less build
outputs, virtual environments and caches, when ROOT is not a git checkout) for the
places a repository cannot point to: the shared folders beside a checkout ("shared"
followed by "/spec" or "/notes", or reached through "../") and absolute paths under the
"/work" machine folder. Prints one line per occurrence, "FILE:LINE: ...", and exits 1
when there is any; the project's own specification is docs/spec/.
"""

import os
import re
import subprocess
import sys

# Written in pieces so that this file does not match itself.
PATTERNS = [
    ("shared" + "/spec", re.compile(re.escape("shared" + "/spec"))),
    ("shared" + "/notes", re.compile(re.escape("shared" + "/notes"))),
    ("../" + "shared", re.compile(re.escape("../" + "shared"))),
    # An absolute path under the machine folder; not a relative one such as docs/work/x.
    ("/" + "work/", re.compile(r"(?<![\w.~/-])" + re.escape("/" + "work/"))),
]
# Not part of a checkout's sources when walking a tree that is not one.
SKIPPED_DIRS = re.compile(r"^(\.git|build.*|out|\.venv.*|__pycache__|\.cache)$")


def tracked_files(root):
    """The files git tracks under root, or None when root is not a git checkout."""
    try:
        top = subprocess.run(["git", "-C", root, "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True).stdout.strip()
        if os.path.realpath(top) != os.path.realpath(root):
            return None
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"],
                             capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return [p for p in out.decode("utf-8", "surrogateescape").split("\0") if p]


def walked_files(root):
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not SKIPPED_DIRS.match(d))
        for name in sorted(names):
            files.append(os.path.relpath(os.path.join(folder, name), root))
    return files


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    root = argv[1]
    files = tracked_files(root)
    source = "git ls-files"
    if files is None:
        files, source = walked_files(root), "the source tree"
    found = 0
    for rel in files:
        path = os.path.join(root, rel)
        if not os.path.isfile(path) or os.path.islink(path):
            continue
        with open(path, "rb") as f:
            data = f.read()
        if b"\0" in data[:8192]:
            continue  # binary
        for number, line in enumerate(data.decode("utf-8", "replace").splitlines(), 1):
            for name, pattern in PATTERNS:
                if pattern.search(line):
                    found += 1
                    excerpt = line.strip()
                    if len(excerpt) > 160:
                        excerpt = excerpt[:157] + "..."
                    print(f"{rel}:{number}: cites '{name}', outside the repository: {excerpt}")
    if found:
        print(f"{found} citation(s) of paths outside the repository in {len(files)} files "
              f"({source}); cite docs/spec/ and the repository's own files instead")
        return 1
    print(f"no citation of a path outside the repository in {len(files)} files ({source})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
