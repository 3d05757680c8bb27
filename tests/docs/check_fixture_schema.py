#!/usr/bin/env python3
"""Every fixture committed under fixtures/ is valid under the JSON Schema of its version
(fixtures/schema/fixture-vN.schema.json), and each schema rejects what its version does
not hold: a version 1 file with a version 2 field (a bias group, an Adam or Adagrad step), a
version 2 bias group that is empty or gives plain SGD a weight decay, exact_rational on Adam's
or Adagrad's parameters, an Adam or Adagrad step without its second moment, Adam's second
moment without its first, a momentum buffer with Adagrad, a clip in version 1, a clip
without its eps, exact_rational on what a clipped step's optimizer makes.

    check_fixture_schema.py FIXTURES_DIR

Exit 0 when all hold, 1 naming each that does not.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from collections.abc import Callable
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
    def committed(what: str, matches: Callable[[Any], bool]) -> Any:
        """The first committed version 2 fixture that `matches`, else a failure."""
        found = next((f for f in by_version.get(2, []) if matches(f)), None)
        if found is None:
            failures.append(f"no committed version 2 fixture {what}")
        return found

    def rejected(*cases: tuple[str, Any, int]) -> None:
        """Each (name, fixture, version): the version's schema must reject the fixture."""
        for name, bad, version in cases:
            if schemas[version].is_valid(bad):
                failures.append(f"the version {version} schema accepts {name}")

    def kind(f: Any) -> str | None:
        return f["inputs"].get("optimizer", {}).get("kind")

    def changed(f: Any, change: Callable[[Any], None]) -> Any:
        """A deep copy of `f` with `change` applied."""
        out = copy.deepcopy(f)
        change(out)
        return out

    def as_v1(f: Any) -> Any:
        return changed(f, lambda g: g.update(version=1))

    group = committed("with inputs.bias_group", lambda f: "bias_group" in f["inputs"])
    if group is not None:
        empty = changed(group, lambda g: g["inputs"].update(bias_group={}))
        plain = copy.deepcopy(group)  # a plain-SGD step in every other respect
        for part in ("inputs", "outputs"):
            for key in ("optimizer", "momentum_kernel", "momentum_bias"):
                plain[part].pop(key, None)
        lr_only = changed(plain, lambda g: g["inputs"]["bias_group"].pop("weight_decay"))
        if not schemas[2].is_valid(lr_only):
            failures.append("the version 2 schema rejects a plain-SGD bias group with an lr")
        rejected(("a version 1 file with bias_group", as_v1(group), 1),
                 ("an empty bias_group", empty, 2),
                 ("a plain-SGD bias group with a weight decay", plain, 2))

    def rational_parameter(f: Any, output: str) -> Any:
        exact = f["outputs"][output]["exact"]
        return changed(f, lambda g: g["outputs"][output].update(exact_rational=["0"] * len(exact)))

    def dropped(f: Any, part: str, key: str) -> Any:
        return changed(f, lambda g: g[part].pop(key))

    adam = committed("of an Adam step", lambda f: kind(f) == "adam")
    if adam is not None:
        rejected(("an Adam step in version 1", as_v1(adam), 1),
                 ("exact_rational on Adam's kernel", rational_parameter(adam, "kernel"), 2),
                 ("an Adam step without its second moment",
                  dropped(adam, "outputs", "second_moment_bias"), 2))
    adagrad = committed("of an Adagrad step with a carried sum",
                        lambda f: kind(f) == "adagrad" and "second_moment_kernel" in f["inputs"])
    if adagrad is not None:
        def buffer_as_sum(part: str) -> Any:
            return changed(adagrad, lambda g: g[part].update(
                momentum_kernel=g[part]["second_moment_kernel"],
                momentum_bias=g[part]["second_moment_bias"]))

        rejected(("an Adagrad step in version 1", as_v1(adagrad), 1),
                 ("exact_rational on Adagrad's bias", rational_parameter(adagrad, "bias"), 2),
                 ("an Adagrad step without its sum after the step",
                  dropped(adagrad, "outputs", "second_moment_kernel"), 2),
                 ("a momentum buffer input with Adagrad", buffer_as_sum("inputs"), 2),
                 ("a momentum buffer output with Adagrad", buffer_as_sum("outputs"), 2),
                 ("Adagrad without initial_accumulator_value",
                  changed(adagrad,
                          lambda g: g["inputs"]["optimizer"].pop("initial_accumulator_value")), 2))
    carried = committed("of an Adam step with carried moments",
                        lambda f: kind(f) == "adam" and "second_moment_kernel" in f["inputs"])
    if carried is not None:
        first_only = changed(carried, lambda g: [g["inputs"].pop(k)
                                                 for k in ("momentum_kernel", "momentum_bias")])
        rejected(("Adam's second moment without its first", first_only, 2))
    clipped = committed("of a clipped momentum step",
                        lambda f: "clip" in f["inputs"] and kind(f) == "momentum")
    if clipped is not None:
        rejected(("a version 1 file with clip", as_v1(clipped), 1),
                 ("a clip without its eps", changed(clipped, lambda g: g["inputs"]["clip"].pop("eps")), 2),
                 ("exact_rational on a clipped step's kernel", rational_parameter(clipped, "kernel"), 2),
                 ("exact_rational on a clipped step's buffer",
                  rational_parameter(clipped, "momentum_bias"), 2))
    for line in failures:
        print(line)
    print(f"{len(files)} fixtures checked against {len(schemas)} schemas, "
          f"{len(failures)} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
