"""Smoke tests of the ready-made adapters, driven through protocol v1 as the suite drives
them: the worked example of step.md bit for bit, random cases against a float64 NumPy
computation with a loose tolerance (the real checking is the suite's job), the declared
subnormal policy and step counter measured, and the NumPy mutants each changing an
output. An adapter whose framework is not installed in this interpreter is skipped.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fakesuite import F32, WORKED, AdapterProcess, make_case, with_adam, with_momentum

PYTHON_DIR = Path(__file__).resolve().parent.parent
ADAPTERS = PYTHON_DIR / "adapters"
MUTANTS = ("post_update_loss", "mean_over_batch", "grad_times_shards", "drop_remainder_rows",
           "mean_of_shard_means", "half_precision_grad", "reshape_not_transpose", "wrong_sign",
           "missing_factor_two", "bias_not_updated", "lr_twice", "step_not_advanced",
           "nondeterministic", "skip_tiny_updates", "unbiased_mean", "rows_past_16_dropped",
           "chunked_mean_32", "columns_past_8_dropped", "float32_counter", "int32_counter",
           "fresh_buffer_every_step", "dampening_on_first_step", "nesterov_without_lookahead",
           "decay_convention_swapped", "buffer_shared", "adam_bias_correction_off_by_one",
           "adam_eps_inside", "adam_b2_on_gradient", "adam_decay_in_moment",
           "adam_moments_bfloat16", "adam_state_not_advanced")
FRAMEWORKS = {"numpy": "numpy", "torch": "torch", "flax": "flax"}
SCRIPTS = {"numpy": ADAPTERS / "numpy_step.py", "torch": ADAPTERS / "torch_step.py",
           "flax": ADAPTERS / "flax_nnx_step.py",
           "minimal": PYTHON_DIR / "examples" / "minimal_adapter.py"}
INT64_MAX = 2**63 - 1
Start = Callable[..., AdapterProcess]


@pytest.fixture(scope="module")
def adapter() -> Iterator[Start]:
    """adapter(name, *args): the running adapter, started once per module."""
    running: dict[tuple[str, ...], AdapterProcess] = {}

    def start(name: str, *args: str) -> AdapterProcess:
        module = FRAMEWORKS.get(name, "numpy")
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed in {sys.executable}")
        key = (name, *args)
        if key not in running:
            running[key] = AdapterProcess([sys.executable, str(SCRIPTS[name]), *args])
        return running[key]

    yield start
    for a in running.values():
        assert a.close() == 0, a.stderr()


def reference(case: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """float64 results, and the magnitudes that the rounding errors scale with."""
    x, y, w, b = (case[key].astype(np.float64) for key in ("x", "y", "kernel", "bias"))
    lr, c = float(case["lr"]), case["n"] * case["k"]
    r = x @ w + b - y
    s = np.abs(x) @ np.abs(w) + np.abs(b) + np.abs(y)        # scale of r's error
    gw, gb = 2 / c * x.T @ r, 2 / c * r.sum(0)
    sgw, sgb = 2 / c * np.abs(x).T @ s, 2 / c * s.sum(0)
    return {"loss": ((r * r).mean(), (s * s).mean()),
            "grad_kernel": (gw, sgw), "grad_bias": (gb, sgb),
            "kernel": (w - lr * gw, np.abs(w) + lr * sgw), "bias": (b - lr * gb, np.abs(b) + lr * sgb)}


@pytest.mark.parametrize("name", ["numpy", "torch", "flax", "minimal"])
def test_worked_example(adapter: Start, name: str) -> None:
    a = adapter(name)
    out = a.result(WORKED)
    assert out["loss"].tolist() == [2.5] and out["kernel"].tolist() == [0.5], out
    assert out["bias"].tobytes() == np.array([-0.3], F32).tobytes(), out["bias"]
    if "grads" in a.info["capabilities"]:
        assert out["grad_kernel"].tolist() == [5.0] and out["grad_bias"].tolist() == [3.0], out
    if "step_counter" in a.info["capabilities"]:
        assert out["step"] == 1, out


@pytest.mark.parametrize("name", ["numpy", "torch", "flax"])
def test_random_cases(adapter: Start, name: str) -> None:
    a = adapter(name)
    shapes = [(1, 1, 1), (3, 2, 5), (17, 8, 3), (64, 64, 64), (5, 1, 9)]
    for i, (n, d, k) in enumerate(shapes):
        case = make_case(n, d, k, num_shards=1 + i % 3, step=41 * i, lr=0.01 * (i + 1), seed=i)
        out = a.result(case)
        for key, (ref, scale) in reference(case).items():
            if key.startswith("grad") and "grads" not in a.info["capabilities"]:
                continue
            err = np.abs(out[key] - np.ravel(ref))
            assert np.all(err <= 1e-4 * np.ravel(scale) + 1e-30), (name, (n, d, k), key, err.max())
        if "step_counter" in a.info["capabilities"]:
            assert out["step"] == case["step"] + 1


def reference_momentum(case: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """float64 results of a momentum step, and the magnitudes their errors scale with."""
    plain = reference(case)
    mu, damp, wd = (float(case[key]) for key in ("momentum", "dampening", "weight_decay"))
    lr, coupled = float(case["lr"]), case["decay"] == "coupled"
    out = {key: plain[key] for key in ("loss", "grad_kernel", "grad_bias")}
    for name in ("kernel", "bias"):
        p = case[name].astype(np.float64)
        g, sg = plain["grad_" + name]
        ge, sge = (g + wd * p, sg + wd * np.abs(p)) if coupled else (g, sg)
        if "momentum_" + name in case and mu != 0:  # at mu = 0 nothing to dampen: ge
            buf = case["momentum_" + name].astype(np.float64)
            b, sb = mu * buf + (1 - damp) * ge, mu * np.abs(buf) + sge
        else:
            b, sb = ge, sge
        d, sd = (ge + mu * b, sge + mu * sb) if case["nesterov"] else (b, sb)
        if not coupled:
            d, sd = d + wd * p, sd + wd * np.abs(p)
        out["momentum_" + name] = (b, sb)
        out[name] = (p - lr * d, np.abs(p) + lr * sd)
    return out


def reference_adam(case: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """float64 results of an Adam step (docs/spec/step.md, Adam), and the magnitudes
    their errors scale with (the direction's propagated to first order, with the bias
    corrections 1 - b**t as float32 computes them: b**t rounded, then subtracted)."""
    plain = reference(case)
    b1, b2, eps, eps_root, wd = (float(case[key])
                                 for key in ("b1", "b2", "eps", "eps_root", "weight_decay"))
    lr, coupled, t = float(case["lr"]), case["decay"] == "coupled", case["step"] + 1
    correction1, correction2 = 1 - b1**t, 1 - b2**t
    out = {key: plain[key] for key in ("loss", "grad_kernel", "grad_bias")}
    for name in ("kernel", "bias"):
        p = case[name].astype(np.float64)
        g, sg = plain["grad_" + name]
        ge, sge = (g + wd * p, sg + wd * np.abs(p)) if coupled else (g, sg)
        m = case.get("momentum_" + name, np.zeros_like(p)).astype(np.float64)
        v = case.get("second_moment_" + name, np.zeros_like(p)).astype(np.float64)
        m1, sm = b1 * m + (1 - b1) * ge, b1 * np.abs(m) + (1 - b1) * sge
        v1, sv = b2 * v + (1 - b2) * ge * ge, b2 * v + 3 * (1 - b2) * sge * sge
        mh, smh, vh, svh = m1 / correction1, sm / correction1, v1 / correction2, sv / correction2
        root = np.sqrt(vh + eps_root)
        denominator = root + eps
        a = mh / denominator
        sa = smh / denominator + np.abs(mh) * svh / (2 * np.maximum(root, 1e-300) * denominator**2)
        sa += np.abs(a) * (b1**t / correction1 + b2**t / correction2)
        if not coupled:
            a, sa = a + wd * p, sa + wd * np.abs(p)
        out["momentum_" + name], out["second_moment_" + name] = (m1, sm), (v1, sv)
        out[name] = (p - lr * a, np.abs(p) + lr * sa)
    return out


MOMENTUM_OPTIONS = [dict(momentum=0.9), dict(momentum=0.5, nesterov=True),
                    dict(momentum=0.3, dampening=0.5), dict(momentum=0.9, weight_decay=0.01),
                    dict(momentum=0.1, nesterov=True, weight_decay=0.05, decay="decoupled"),
                    dict(momentum=0.0, weight_decay=0.001, decay="decoupled"),
                    dict(momentum=0.0, dampening=0.5, weight_decay=0.01)]


@pytest.mark.parametrize("name", ["numpy", "torch", "flax"])
def test_random_momentum_cases(adapter: Start, name: str) -> None:
    a = adapter(name)
    declared = a.info["momentum"]
    shapes = [(1, 1, 1), (3, 2, 5), (17, 8, 3), (64, 64, 64), (5, 1, 9)]
    tried = 0
    for i, (n, d, k) in enumerate(shapes):
        for j, options in enumerate(MOMENTUM_OPTIONS):
            if (options.get("dampening") and not declared["dampening"] or
                    options.get("nesterov") and not declared["nesterov"] or
                    options.get("weight_decay") and
                    options.get("decay", "coupled") not in declared["weight_decay"]):
                continue
            case = with_momentum(make_case(n, d, k, step=i + j, lr=0.01 * (i + 1), seed=i),
                                 buffer=(i + j) % 3 != 0, seed=j, **options)
            out = a.result(case)
            tried += 1
            for key, (ref, scale) in reference_momentum(case).items():
                err = np.abs(out[key] - np.ravel(ref))
                assert np.all(err <= 1e-4 * np.ravel(scale) + 1e-30), (name, options, key, err.max())
    assert tried >= 4 * len(shapes)


@pytest.mark.parametrize("name, momentum", [
    ("numpy", {"dampening": True, "nesterov": True, "weight_decay": ["coupled", "decoupled"]}),
    ("flax", {"dampening": False, "nesterov": True, "weight_decay": ["coupled", "decoupled"]}),
    ("torch", {"dampening": True, "nesterov": True, "weight_decay": ["coupled"]}),
])
def test_declared_momentum(adapter: Start, name: str, momentum: dict[str, Any]) -> None:
    assert adapter(name).info["momentum"] == momentum


def adam_cases(eps_root: bool, count: int = 24) -> list[dict[str, Any]]:
    """Random Adam steps: fresh state and moments before the step (v >= 0, of various
    sizes), b1 in [0, 0.99], b2 in [0.9, 0.9999], eps in [1e-8, 1e-3], weight decay 0 or
    0.01 by either convention, step 0, 1, 5 or 1000; eps_root 1e-8 in some when taken."""
    rng = np.random.default_rng(11)
    shapes = [(1, 1, 1), (3, 2, 5), (17, 8, 3), (64, 64, 64), (5, 1, 9), (40, 10, 2)]
    cases = []
    for i in range(count):
        n, d, k = shapes[i % len(shapes)]
        case = make_case(n, d, k, step=int(rng.choice([0, 1, 5, 1000])),
                         lr=float(rng.choice([1e-3, 0.01, 0.1])), seed=i)
        case = with_adam(case, b1=rng.uniform(0, 0.99), b2=rng.uniform(0.9, 0.9999),
                         eps=10 ** rng.uniform(-8, -3),
                         eps_root=1e-8 if eps_root and i % 4 == 1 else 0,
                         weight_decay=float(rng.choice([0, 0.01])),
                         decay=("coupled", "decoupled")[i % 2], state=i % 3 != 0, seed=100 + i)
        for name in ("kernel", "bias"):
            if "second_moment_" + name in case:
                case["second_moment_" + name] *= F32(10 ** rng.uniform(-6, 0))
        cases.append(case)
    return cases


ADAM_ADAPTERS = [("numpy",), ("torch",), ("torch", "--foreach", "on"),
                 ("torch", "--foreach", "off"), ("torch", "--fused"), ("flax",)]


@pytest.mark.parametrize("args", ADAM_ADAPTERS, ids=" ".join)
def test_random_adam_cases(adapter: Start, args: tuple[str, ...]) -> None:
    a = adapter(*args)
    for case in adam_cases(a.info["adam"]["eps_root"]):
        out = a.result(case)
        for key, (ref, scale) in reference_adam(case).items():
            err = np.abs(out[key] - np.ravel(ref))
            assert np.all(err <= 1e-5 * np.ravel(scale) + 1e-30), (args, key, case["step"],
                                                                    err.max())


@pytest.mark.parametrize("name, adam", [
    ("numpy", {"weight_decay": ["coupled", "decoupled"], "eps_root": True}),
    ("torch", {"weight_decay": ["coupled", "decoupled"], "eps_root": False}),
    ("flax", {"weight_decay": ["coupled", "decoupled"], "eps_root": True}),
])
def test_declared_adam(adapter: Start, name: str, adam: dict[str, Any]) -> None:
    assert adapter(name).info["adam"] == adam


def test_torch_adam_without_eps_root_is_answered_with_an_error(adapter: Start) -> None:
    a = adapter("torch")
    a.next_id += 1
    reply = a.step(with_adam(WORKED, eps_root=1e-8), a.next_id)
    assert reply == {"op": "error", "id": a.next_id,
                     "message": "eps_root: 1e-08, but this adapter declared no eps_root"}


@pytest.mark.parametrize("name, steps", [("numpy", [2**31 - 1, 2**32, INT64_MAX - 1]),
                                         ("torch", [2**24 + 1, 2**31, INT64_MAX - 1]),
                                         ("flax", [2**31 - 2, 2**31 - 1, 2**32 - 1])])
def test_adam_at_large_steps(adapter: Start, name: str, steps: list[int]) -> None:
    """Steps near and past the ends of the counters the adapters keep t in (int64,
    torch's float32, optax's int32), with b2 the largest float32 below 1, so that b2**t is
    still far from 0 near 2**24: each agrees with the reference."""
    a = adapter(name)
    for step in steps:
        case = with_adam(make_case(3, 2, 2, step=step, seed=step % 97), b2=0.99999994,
                         weight_decay=0.01, decay="decoupled")
        out = a.result(case)
        for key, (ref, scale) in reference_adam(case).items():
            err = np.abs(out[key] - np.ravel(ref))
            assert np.all(err <= 1e-5 * np.ravel(scale) + 1e-30), (name, step, key, err.max())


@pytest.mark.parametrize("name", ["numpy", "torch", "flax"])
def test_declared_subnormal_policy_is_what_the_adapter_does(adapter: Start, name: str) -> None:
    """Measured: a subnormal input (x = 2**-130) and a subnormal result (loss = 2**-128)."""
    a = adapter(name)
    daz = a.result(make_case(1, 1, 1, lr=0, kernel=[[2.0**100]], bias=[0], x=[[2.0**-130]], y=[[0]]))
    ftz = a.result(make_case(1, 1, 1, lr=0, kernel=[[0]], bias=[2.0**-64], x=[[0]], y=[[0]]))
    keeps_inputs, keeps_results = daz["loss"][0] == 2.0**-60, ftz["loss"][0] == 2.0**-128
    measured = "ieee" if keeps_inputs and keeps_results else "ftz"
    assert a.info["subnormals"] == measured


@pytest.mark.parametrize("name, counter, ends", [
    ("numpy", {"dtype": "int64", "at_end": "saturate"}, [(INT64_MAX - 1, INT64_MAX), (INT64_MAX, INT64_MAX)]),
    ("flax", {"dtype": "uint32", "at_end": "wrap"}, [(2**32 - 2, 2**32 - 1), (2**32 - 1, 0)]),
])
def test_declared_counter_is_what_the_adapter_does(adapter: Start, name: str, counter: dict[str, str],
                                                   ends: list[tuple[int, int]]) -> None:
    a = adapter(name)
    assert a.info["counter"] == counter
    for step, after in ends:
        assert a.result({**WORKED, "step": step})["step"] == after


def test_torch_declares_no_counter(adapter: Start) -> None:
    a = adapter("torch")
    assert "step_counter" not in a.info["capabilities"] and "counter" not in a.info


def test_unknown_mutant_exits_2() -> None:
    r = subprocess.run([sys.executable, str(SCRIPTS["numpy"]), "--mutant", "no_such_bug"],
                       input=b"", capture_output=True, timeout=60)
    assert r.returncode == 2 and r.stdout == b"" and b"no_such_bug" in r.stderr, r


def probe_cases() -> list[dict[str, Any]]:
    """Cases on which every mutant changes some output."""
    # 7 rows over 3 shards: uneven (3, 2, 2) and a remainder. Targets lie close to the
    # fit around a large kernel, so some updates fall below 1e-6 of their parameter.
    near = make_case(7, 3, 2, num_shards=3, step=5, lr=0.1, seed=3)
    near["kernel"] = (near["kernel"] * 100).astype(F32)
    near["y"] = (near["x"] @ near["kernel"] + near["bias"] + 1e-3 * near["y"]).astype(F32)
    return [near,
            make_case(40, 10, 2, seed=4),                 # rows past 16 and 32, columns past 8
            {**make_case(2, 1, 1, seed=5), "step": 2**24},  # a float32 counter's end
            {**make_case(2, 1, 1, seed=6), "step": 2**31 - 1},  # an int32 counter's end
            # Momentum: a buffer, Nesterov and coupled decay; a first step with dampening.
            with_momentum(make_case(5, 3, 2, seed=7), dampening=0.5, nesterov=True,
                          weight_decay=0.05),
            with_momentum(make_case(5, 3, 2, seed=8), dampening=0.5, weight_decay=0.05,
                          decay="decoupled", buffer=False),
            # Adam: moments before the step, decoupled decay, an eps that shows where it
            # is added; a first step at step 0 with coupled decay and eps_root.
            with_adam(make_case(5, 3, 2, step=3, seed=9), b1=0.8, b2=0.95, eps=1e-3,
                      weight_decay=0.05, decay="decoupled"),
            with_adam(make_case(5, 3, 2, seed=10), eps_root=1e-6, weight_decay=0.05,
                      state=False)]


@pytest.mark.parametrize("mutant", MUTANTS)
def test_every_mutant_changes_an_output(adapter: Start, mutant: str) -> None:
    cases = probe_cases()
    clean = [adapter("numpy").result(c) for c in cases]
    a = adapter("numpy", "--mutant", mutant)
    assert a.info["name"] == f"numpy-mutant-{mutant}"
    changed = [i for i, c in enumerate(cases)
               if any(not np.array_equal(a.result(c)[key], clean[i][key], equal_nan=True)
                      for key in clean[i] if key not in ("op", "id", "payload"))]
    assert changed, f"{mutant} changed no output"


def test_rows_past_16_dropped(adapter: Start) -> None:
    a, clean = adapter("numpy", "--mutant", "rows_past_16_dropped"), adapter("numpy")
    for n, same in ((16, True), (17, False)):
        case = make_case(n, 3, 2, seed=n)
        assert np.array_equal(a.result(case)["grad_kernel"], clean.result(case)["grad_kernel"]) == same


def test_chunked_mean_32_is_wrong_only_with_a_short_last_chunk(adapter: Start) -> None:
    a, clean = adapter("numpy", "--mutant", "chunked_mean_32"), adapter("numpy")
    for n, close in ((32, True), (64, True), (40, False)):
        case = make_case(n, 3, 2, seed=n)
        got, want = a.result(case)["grad_kernel"], clean.result(case)["grad_kernel"]
        assert np.allclose(got, want, rtol=1e-5, atol=1e-6) == close, n


def test_columns_past_8_dropped(adapter: Start) -> None:
    a, clean = adapter("numpy", "--mutant", "columns_past_8_dropped"), adapter("numpy")
    case = make_case(5, 8, 2, seed=1)
    assert np.array_equal(a.result(case)["kernel"], clean.result(case)["kernel"])
    case = make_case(5, 10, 2, seed=2)
    out = a.result(case)
    assert np.all(out["grad_kernel"].reshape(10, 2)[8:] == 0)
    assert np.array_equal(out["kernel"].reshape(10, 2)[8:], case["kernel"][8:])
    assert not np.array_equal(out["grad_kernel"], clean.result(case)["grad_kernel"])


@pytest.mark.parametrize("mutant, step, after", [
    ("float32_counter", 2**24 - 1, 2**24), ("float32_counter", 2**24, 2**24),
    ("int32_counter", 2**31 - 2, 2**31 - 1), ("int32_counter", 2**31 - 1, -2**31),
])
def test_counter_mutants(adapter: Start, mutant: str, step: int, after: int) -> None:
    a = adapter("numpy", "--mutant", mutant)
    assert a.result({**WORKED, "step": step})["step"] == after
