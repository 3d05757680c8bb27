#!/usr/bin/env python3
"""Every fixture committed under fixtures/ is valid under the JSON Schema of its version
(fixtures/schema/fixture-vN.schema.json), and each schema rejects what its version does
not hold: a version 1 file with a version 2 field (a bias group, an Adam or Adagrad step), a
version 2 bias group that is empty or gives plain SGD a weight decay, exact_rational on Adam's
or Adagrad's parameters, an Adam or Adagrad step without its second moment, Adam's second
moment without its first, a momentum buffer with Adagrad.

    check_fixture_schema.py FIXTURES_DIR

Exit 0 when all hold, 1 naming each that does not.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import jsonschema


def validators(root: Path) -> dict[int, jsonschema.Draft202012Validator]:
    out = {}
    for path in sorted((root / "schema").glob("fixture-v*.schema.json")):
        schema = json.loads(path.read_text())
        jsonschema.Draft202012Validator.check_schema(schema)
        out[int(path.name.split("-v")[1].split(".")[0])] = jsonschema.Draft202012Validator(schema)
    return out


def main() -> int:
    root = Path(sys.argv[1])
    schemas = validators(root)
    failures: list[str] = []
    files = sorted(p for p in root.rglob("*.json") if "schema" not in p.parts)
    by_version: dict[int, list[Any]] = {}
    for path in files:
        fixture = json.loads(path.read_text())
        version = fixture.get("version")
        if version not in schemas:
            failures.append(f"{path}: no schema for version {version!r}")
            continue
        by_version.setdefault(version, []).append(fixture)
        for error in schemas[version].iter_errors(fixture):
            failures.append(f"{path}: {error.json_path}: {error.message}")
    # Each schema can fail: the nearest files it must reject.
    group = next((f for f in by_version.get(2, []) if "bias_group" in f["inputs"]), None)
    if group is None:
        failures.append("no committed version 2 fixture with inputs.bias_group")
    else:
        as_v1 = copy.deepcopy(group)
        as_v1["version"] = 1
        empty = copy.deepcopy(group)
        empty["inputs"]["bias_group"] = {}
        plain = copy.deepcopy(group)  # a plain-SGD step in every other respect
        for part in ("inputs", "outputs"):
            for key in ("optimizer", "momentum_kernel", "momentum_bias"):
                plain[part].pop(key, None)
        lr_only = copy.deepcopy(plain)
        del lr_only["inputs"]["bias_group"]["weight_decay"]
        if not schemas[2].is_valid(lr_only):
            failures.append("the version 2 schema rejects a plain-SGD bias group with an lr")
        for name, bad, version in (("a version 1 file with bias_group", as_v1, 1),
                                   ("an empty bias_group", empty, 2),
                                   ("a plain-SGD bias group with a weight decay", plain, 2)):
            if schemas[version].is_valid(bad):
                failures.append(f"the version {version} schema accepts {name}")
    adam = next((f for f in by_version.get(2, [])
                 if f["inputs"].get("optimizer", {}).get("kind") == "adam"), None)
    if adam is None:
        failures.append("no committed version 2 fixture of an Adam step")
    else:
        as_v1 = copy.deepcopy(adam)
        as_v1["version"] = 1
        rational = copy.deepcopy(adam)
        rational["outputs"]["kernel"]["exact_rational"] = ["0"] * len(adam["outputs"]["kernel"]["exact"])
        no_moment = copy.deepcopy(adam)
        del no_moment["outputs"]["second_moment_bias"]
        for name, bad, version in (("an Adam step in version 1", as_v1, 1),
                                   ("exact_rational on Adam's kernel", rational, 2),
                                   ("an Adam step without its second moment", no_moment, 2)):
            if schemas[version].is_valid(bad):
                failures.append(f"the version {version} schema accepts {name}")
    adagrad = next((f for f in by_version.get(2, [])
                    if f["inputs"].get("optimizer", {}).get("kind") == "adagrad"
                    and "second_moment_kernel" in f["inputs"]), None)
    if adagrad is None:
        failures.append("no committed version 2 fixture of an Adagrad step with a carried sum")
    else:
        as_v1 = copy.deepcopy(adagrad)
        as_v1["version"] = 1
        rational = copy.deepcopy(adagrad)
        rational["outputs"]["bias"]["exact_rational"] = ["0"] * len(adagrad["outputs"]["bias"]["exact"])
        no_sum = copy.deepcopy(adagrad)
        del no_sum["outputs"]["second_moment_kernel"]
        with_buffer = copy.deepcopy(adagrad)
        with_buffer["inputs"]["momentum_kernel"] = adagrad["inputs"]["second_moment_kernel"]
        with_buffer["inputs"]["momentum_bias"] = adagrad["inputs"]["second_moment_bias"]
        buffer_out = copy.deepcopy(adagrad)
        buffer_out["outputs"]["momentum_kernel"] = adagrad["outputs"]["second_moment_kernel"]
        buffer_out["outputs"]["momentum_bias"] = adagrad["outputs"]["second_moment_bias"]
        no_eps_field = copy.deepcopy(adagrad)
        del no_eps_field["inputs"]["optimizer"]["initial_accumulator_value"]
        for name, bad, version in (("an Adagrad step in version 1", as_v1, 1),
                                   ("exact_rational on Adagrad's bias", rational, 2),
                                   ("an Adagrad step without its sum after the step", no_sum, 2),
                                   ("a momentum buffer input with Adagrad", with_buffer, 2),
                                   ("a momentum buffer output with Adagrad", buffer_out, 2),
                                   ("Adagrad without initial_accumulator_value", no_eps_field, 2)):
            if schemas[version].is_valid(bad):
                failures.append(f"the version {version} schema accepts {name}")
    carried = next((f for f in by_version.get(2, [])
                    if f["inputs"].get("optimizer", {}).get("kind") == "adam"
                    and "second_moment_kernel" in f["inputs"]), None)
    if carried is None:
        failures.append("no committed version 2 fixture of an Adam step with carried moments")
    else:
        first_only = copy.deepcopy(carried)
        for key in ("momentum_kernel", "momentum_bias"):
            del first_only["inputs"][key]
        if schemas[2].is_valid(first_only):
            failures.append("the version 2 schema accepts Adam's second moment without its first")
    for line in failures:
        print(line)
    print(f"{len(files)} fixtures checked against {len(schemas)} schemas, "
          f"{len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
