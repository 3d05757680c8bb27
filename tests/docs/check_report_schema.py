#!/usr/bin/env python3
"""Every JSON report the CLI writes is valid under docs/report.schema.json, and its JUnit
report sums each counterexample up in the failure's message.

    check_report_schema.py CLI SCHEMA FAKE_ADAPTER

Runs the CLI on runs that cover each verdict: conformant, not conformant (several
properties failing, with counterexamples and suspects), a fault mid-run (properties not
run), an xfail and a skip line, could not test (the only property asked for skipped); validates each --json report (jsonschema)
and parses each --junit report. Exit 0 when all hold, 1 naming each that does not.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema


def main() -> int:
    cli, schema_path, fake = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    schema = json.loads(schema_path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    failures: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        xfails = Path(tmp, "xfails.txt")
        xfails.write_text("xfail accuracy  # known\nskip determinism  # not this time\n")
        skip_all = Path(tmp, "skip_all.txt")
        skip_all.write_text("skip accuracy  # nothing else is asked for\n")
        runs = {
            "conformant": ["--impl", "builtin:float32", "--cases", "20"],
            "not_conformant": ["--impl", "builtin:sum-not-mean", "--cases", "20"],
            "xfail_skip": ["--impl", "builtin:wrong-sign", "--cases", "10", "--xfails", str(xfails)],
            "fault": ["--impl", f"{sys.executable} {fake} crash_after_3", "--cases", "10"],
            "could_not_test": ["--impl", "builtin:float32", "--property", "accuracy", "--xfails",
                               str(skip_all)],
            # Declared recipes in the header: Adagrad alone; clipping, a bias group; and
            # declared precision stages.
            "adagrad_recipe": ["--impl", "builtin:adagrad-torch", "--cases", "10"],
            "clipping_recipe": ["--impl", "builtin:clip-torch", "--cases", "10"],
            "precision_stages": ["--impl", "builtin:bf16-reduce-undeclared", "--cases", "10"],
            "bias_group_recipe": ["--impl", "builtin:no-decay-on-bias", "--cases", "10"],
        }
        seen: set[str] = set()
        for name, args in runs.items():
            report, junit = Path(tmp, f"{name}.json"), Path(tmp, f"{name}.xml")
            done = subprocess.run([cli, "run", *args, "--json", str(report), "--junit", str(junit)],
                                  capture_output=True, text=True, timeout=300)
            if not report.exists():
                failures.append(f"{name}: no JSON report (exit {done.returncode}): {done.stderr[-300:]}")
                continue
            data = json.loads(report.read_text())
            for error in validator.iter_errors(data):
                failures.append(f"{name}: {'/'.join(map(str, error.absolute_path))}: {error.message}")
            seen.add(data["verdict"])
            seen.update(p["verdict"] for p in data["properties"])
            root = ET.parse(junit).getroot()
            for case in root.iter("testcase"):
                failure = case.find("failure")
                prop = next(p for p in data["properties"] if p["name"] == case.get("name"))
                cx = prop.get("counterexample")
                if failure is None or cx is None:
                    continue
                if failure.get("message") != cx["summary"] or "\n" in cx["summary"]:
                    failures.append(f"{name}: {prop['name']}: JUnit message {failure.get('message')!r} "
                                    f"is not the one-line summary {cx['summary']!r}")
                if "inputs: " not in (failure.text or "") or cx["replay"] not in (failure.text or ""):
                    failures.append(f"{name}: {prop['name']}: JUnit body lacks the inputs or the replay")
        for verdict in ("conformant", "not_conformant", "could_not_test", "pass", "fail", "fault",
                        "xfail", "skip", "not_run"):
            if verdict not in seen:
                failures.append(f"no run covered the verdict {verdict!r}")
    for f in failures:
        print(f, file=sys.stderr)
    print(f"{len(runs)} runs, {len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
