#!/usr/bin/env python3
"""Per shard count S, the worst error/bound and the per-shard parameter bytes of one
implementation: `sgd-conformance run --shards S` for S = 1..8 (accuracy and placement).

    tests/conformance/sharded/shard_table.py build/bin/sgd-conformance \\
        --impl 'conformance/python/run-adapter conformance/python/adapters/jax_spmd_step.py' \\
        [--cases 100] [--seed 1]

Prints a Markdown table. Bytes are parameter storage (float32), not peak memory.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cli", help="path of the sgd-conformance executable")
    parser.add_argument("--impl", required=True)
    parser.add_argument("--cases", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-shards", type=int, default=8)
    args = parser.parse_args()
    print(f"{args.impl}: seed {args.seed}, {args.cases} cases per property and S\n")
    print("| S | accuracy | worst err/bound | of which gradients | worst ULP | placement "
          "| bytes per shard (last case) |")
    print("|---|---|---|---|---|---|---|")
    status = 0
    with tempfile.TemporaryDirectory() as tmp:
        for shards in range(1, args.max_shards + 1):
            report = os.path.join(tmp, f"s{shards}.json")
            rc = subprocess.run([args.cli, "run", "--impl", args.impl, "--shards", str(shards),
                                 "--cases", str(args.cases), "--seed", str(args.seed),
                                 "--property", "accuracy", "--property", "placement",
                                 "--json", report], stdout=subprocess.DEVNULL).returncode
            if rc not in (0, 1):
                print(f"| {shards} | could not test (exit status {rc}) | | | | | |")
                status = 2
                continue
            status = max(status, rc)
            with open(report) as f:
                props = {p["name"]: p for p in json.load(f)["properties"]}
            acc, place = props["accuracy"], props.get("placement", {})
            worst = acc.get("worst") or {}
            stored = place.get("stored_bytes_per_shard")
            shown = "-"
            if stored:
                shown = (f"d={stored['d']} k={stored['k']}: "
                         + " ".join(str(b) for b in stored["bytes"]))
            grads = [(acc["worst_per_output"].get(o) or {}).get("error_over_bound", 0.0)
                     for o in ("grad_kernel", "grad_bias")]
            print(f"| {shards} | {acc['verdict']} | {worst.get('error_over_bound', float('nan')):.3g} "
                  f"| {max(grads):.3g} | {worst.get('ulps', '-')} | {place.get('verdict', 'n/a')} "
                  f"| {shown} |")
    sys.exit(status)


if __name__ == "__main__":
    main()
