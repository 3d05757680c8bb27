"""A declared recipe in the kit: the hello's "recipe", and end to end (with the suite's
CLI) a step that runs only its production AdamW configuration: conformant as declared,
rejected undeclared, and rejected under the nearest wrong declaration."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

import sgdc_adapter
from fakesuite import F32, adam_step

CASES = 20

# The production configuration: torch.optim.AdamW(lr=3e-4, betas=(0.9, 0.95), eps=1e-8,
# weight_decay=...) with the decay drawn in [0, 0.1].
PRODUCTION = {"lr": 3e-4, "b1": 0.9, "b2": 0.95, "eps": 1e-8}
RECIPE = {"optimizers": ["adam"],
          "hyperparameters": {**PRODUCTION, "weight_decay": [0, 0.1], "eps_root": 0}}
ADAMW = {"weight_decay": ["decoupled"]}


def production_adamw_step(case: sgdc_adapter.Case) -> dict[str, Any]:
    """A step whose optimizer was built once with the production hyperparameters: it
    reads only the weight decay from the case, and runs nothing but AdamW."""
    o = case.optimizer
    if not isinstance(o, sgdc_adapter.AdamOptimizer):
        raise ValueError("this step runs AdamW only")
    fixed = sgdc_adapter.AdamOptimizer(
        kind="adam", b1=F32(PRODUCTION["b1"]), b2=F32(PRODUCTION["b2"]), eps=F32(PRODUCTION["eps"]),
        eps_root=F32(0), weight_decay=o.weight_decay, decay="decoupled")
    return adam_step(dataclasses.replace(case, lr=F32(PRODUCTION["lr"]), optimizer=fixed))


def test_the_hello_declares_the_recipe(fake_suite: Any) -> None:
    hello = fake_suite(adam_step, adam=ADAMW, recipe=RECIPE).hello()
    assert hello["recipe"] == {"optimizers": ["adam"],
                               "hyperparameters": {"lr": 3e-4, "b1": 0.9, "b2": 0.95,
                                                   "eps": 1e-8, "weight_decay": [0.0, 0.1],
                                                   "eps_root": 0.0}}
    assert "recipe" not in fake_suite(adam_step, adam=ADAMW).hello()


def test_an_unknown_recipe_field_is_named() -> None:
    with pytest.raises(ValueError, match="unknown recipe fields \\['betas'\\]"):
        sgdc_adapter.Adapter(adam_step, name="x", version="1", recipe={"betas": [0.9, 0.95]})


def check(sgdc: Any, **declarations: Any) -> Any:
    return sgdc.check(production_adamw_step, name="production-adamw",
                      capabilities=("grads", "step_counter"), adam=ADAMW, cases=CASES,
                      **declarations)


def test_the_production_recipe_conforms_as_declared(sgdc: Any) -> None:
    result = check(sgdc, recipe=RECIPE)
    assert result.verdict == "conformant", result.text
    assert result.report["implementation"]["recipe"]["hyperparameters"]["lr"] == 3e-4


def test_undeclared_the_production_step_is_rejected(sgdc: Any) -> None:
    with pytest.raises(pytest.fail.Exception, match="NOT CONFORMANT"):
        check(sgdc)


def test_the_nearest_wrong_declaration_is_rejected(sgdc: Any) -> None:
    wrong = {**RECIPE, "hyperparameters": {**RECIPE["hyperparameters"], "lr": 1e-3}}
    with pytest.raises(pytest.fail.Exception, match="NOT CONFORMANT"):
        check(sgdc, recipe=wrong)
