"""The torch harness (sgdc_adapter.torch): the user's model, optimizer and train step,
kept across cases; the worked example through it, the Linear found or the problem
named, state loaded in torch's layout, and bugs that live across steps rejected by the
suite ($SGDC_CLI) while the correct step conforms. Skipped without torch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import F32, WORKED, make_case, step_message, with_adam, with_momentum

torch = pytest.importorskip("torch")
from sgdc_adapter.torch import TorchHarness, default_optimizer, default_train_step  # noqa: E402

CASES = 5  # per property: each cross-step bug is rejected within its first cases


def parsed(case: dict[str, Any]) -> sgdc_adapter.Case:
    return sgdc_adapter.parse_case(step_message(case, 1)[0])


def linear(d: int, k: int) -> Any:
    return torch.nn.Linear(d, k)


def no_zero_grad(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    optimizer.step()
    return loss


def hook_every_call(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    for p in model.parameters():  # the unscaling hook, registered anew on every call
        p.register_hook(lambda g: g / 2)
    loss = torch.nn.functional.mse_loss(model(x), y)
    (loss * 2).backward()
    optimizer.step()
    return loss


def test_the_worked_example_through_a_nested_model() -> None:
    harness = TorchHarness(lambda d, k: torch.nn.Sequential(torch.nn.Identity(),
                                                            torch.nn.Linear(d, k)))
    out = harness(parsed(WORKED))
    assert out["loss"].tolist() == 2.5 and out["kernel"].tolist() == [[0.5]]
    assert out["bias"].tobytes() == np.array([-0.3], F32).tobytes()
    assert out["grad_kernel"].tolist() == [[5.0]] and out["grad_bias"].tolist() == [3.0]


@pytest.mark.parametrize("model_fn, message", [
    (lambda d, k: torch.nn.ReLU(), "the model (ReLU) holds no torch.nn.Linear"),
    (lambda d, k: torch.nn.Sequential(torch.nn.Linear(d, d), torch.nn.Linear(d, k)),
     "the model (Sequential) holds 2 torch.nn.Linear modules (0, 1); the suite tests exactly one"),
    (lambda d, k: torch.nn.Linear(k, d + 1), "model_fn(1, 1) gave a Linear(1, 2); expected Linear(1, 1)"),
    (lambda d, k: torch.nn.Linear(d, k, bias=False), "the Linear has no bias"),
    (lambda d, k: torch.nn.Linear(d, k).double(), "the Linear's weight is torch.float64"),
    (lambda d, k: "a model", "model_fn must return a torch.nn.Module, got str"),
])
def test_the_problem_with_the_model_is_named(model_fn: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TorchHarness(model_fn)(parsed(WORKED))


def test_one_model_and_optimizer_per_shape_for_the_whole_run() -> None:
    made: list[tuple[int, int]] = []
    optimizers: list[Any] = []

    def model_fn(d: int, k: int) -> Any:
        made.append((d, k))
        return torch.nn.Linear(d, k)

    def optimizer_fn(params: Any, case_optimizer: Any) -> Any:
        optimizers.append(default_optimizer(params, case_optimizer))
        return optimizers[-1]

    harness = TorchHarness(model_fn, optimizer_fn)
    for seed in range(3):
        for shape in ((3, 2, 4), (5, 1, 1)):
            harness(parsed(make_case(*shape, seed=seed)))
            harness(parsed(with_momentum(make_case(*shape, seed=seed), nesterov=True)))
    assert made == [(2, 4), (1, 1)]
    assert [type(o).__name__ for o in optimizers] == ["SGD"] * 4


def test_each_case_loads_its_own_state_and_hyperparameters() -> None:
    """A momentum case, then the same shape's Adam case with moments, then Adam from
    fresh state at step 0: each gives what a newly built optimizer gives."""
    cases = [with_momentum(make_case(4, 3, 2, seed=1), momentum=0.5, dampening=0.25,
                           weight_decay=0.1, seed=2),
             with_adam(make_case(4, 3, 2, step=7, lr=0.01, seed=3), b1=0.8, weight_decay=0.01,
                       decay="decoupled", seed=4),
             with_adam(make_case(4, 3, 2, seed=5), weight_decay=0.01, decay="decoupled",
                       state=False)]
    kept = TorchHarness(linear)
    for case in cases:
        got, fresh = kept(parsed(case)), TorchHarness(linear)(parsed(case))
        assert got.keys() == fresh.keys()
        for key in got:
            assert np.array_equal(got[key], fresh[key]), (case.get("optimizer"), key)


def test_a_plain_case_runs_an_optimizer_made_with_momentum_as_plain_sgd() -> None:
    def optimizer_fn(params: Any, case_optimizer: Any) -> Any:
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)

    out = TorchHarness(linear, optimizer_fn)(parsed(WORKED))
    assert out["kernel"].tolist() == [[0.5]]
    assert out["bias"].tobytes() == np.array([-0.3], F32).tobytes()


def test_at_momentum_0_the_buffer_is_the_decayed_gradient() -> None:
    case = with_momentum(make_case(3, 2, 2, seed=6), momentum=0, weight_decay=0.5)
    out = TorchHarness(linear)(parsed(case))
    expected = torch.from_numpy(out["grad_kernel"].copy()).add(
        torch.from_numpy(case["kernel"]), alpha=0.5).numpy()
    assert np.array_equal(out["momentum_kernel"], expected)


def test_a_float_loss_is_accepted() -> None:
    def item_step(model: Any, optimizer: Any, x: Any, y: Any) -> float:
        return float(default_train_step(model, optimizer, x, y).item())

    out = TorchHarness(linear, train_step=item_step)(parsed(WORKED))
    assert out["loss"] == 2.5
    assert sgdc_adapter.build_result(parsed(WORKED), out, ("grads",))["loss"] == "AAAgQA=="


@pytest.mark.parametrize("train_step, message", [
    (lambda model, optimizer, x, y: torch.zeros(()), "called optimizer.step() 0 times"),
    (lambda model, optimizer, x, y: (optimizer.step(), optimizer.step(), torch.zeros(()))[-1],
     "optimizer.step() ran with no gradient on the Linear's weight"),
])
def test_a_train_step_that_does_not_step_once_is_named(train_step: Any, message: str) -> None:
    with pytest.raises(sgdc_adapter.RejectCase, match=message.replace("(", r"\(").replace(")", r"\)")):
        TorchHarness(linear, train_step=train_step)(parsed(WORKED))


def test_without_zero_grad_the_same_case_twice_differs() -> None:
    harness = TorchHarness(linear, train_step=no_zero_grad)
    first, second = harness(parsed(WORKED)), harness(parsed(WORKED))
    assert first["grad_kernel"].tolist() == [[5.0]] and second["grad_kernel"].tolist() == [[10.0]]


@pytest.mark.parametrize("train_step, verdict", [(None, "conformant"),
                                                 (no_zero_grad, "not_conformant"),
                                                 (hook_every_call, "not_conformant")])
def test_bugs_that_live_across_steps_are_rejected(sgdc: Any, train_step: Any, verdict: str) -> None:
    torch.set_num_threads(1)
    result = sgdc.run(TorchHarness(linear, train_step=train_step), name="torch-harness",
                      cases=CASES, properties=("determinism", "accuracy"),
                      **sgdc_adapter.torch.DECLARATIONS)
    assert result.verdict == verdict, result.text
    if verdict == "not_conformant":
        failed = {p["name"] for p in result.report["properties"] if p["verdict"].lower() == "fail"}
        assert "determinism" in failed, result.text


def test_check_torch_passes_a_correct_step(sgdc: Any) -> None:
    result = sgdc.check_torch(linear, default_optimizer, default_train_step, name="torch-eager",
                              cases=CASES)
    assert result.report["implementation"]["name"] == "torch-eager"


# The phrase each cross-step bug's determinism failure carries in the text report (its
# "suspected:" line):
@pytest.mark.parametrize("train_step, phrase", [
    (no_zero_grad, "gradients accumulate across calls"),
    (hook_every_call, "gradients differ by a constant factor between calls")])
def test_the_report_names_the_cross_step_bug_class(sgdc: Any, train_step: Any, phrase: str) -> None:
    result = sgdc.run(TorchHarness(linear, train_step=train_step), name="torch-harness",
                      cases=CASES, properties=("determinism",), **sgdc_adapter.torch.DECLARATIONS)
    assert result.verdict == "not_conformant", result.text
    assert phrase in result.text.split("FAIL determinism", 1)[-1], result.text


def no_decay_on_bias(params: Any, case_optimizer: Any) -> Any:
    """torch.optim parameter groups: the bias (1-D) without weight decay."""
    groups = [{"params": [p for p in params if p.ndim > 1]},
              {"params": [p for p in params if p.ndim == 1], "weight_decay": 0.0}]
    return default_optimizer(groups, case_optimizer)


# The kit sets each case's hyperparameters into the groups (as a scheduler would), the
# bias's into a group that holds the bias alone: what is tested is the group structure.
# Declared and built: conformant; built but undeclared, or declared but not built (the
# bias left in the kernel's group): rejected, the report naming which.
@pytest.mark.parametrize("optimizer_fn, recipe, verdict, named", [
    (no_decay_on_bias, {"bias_group": {"weight_decay": 0}}, "conformant", None),
    (no_decay_on_bias, None, "not_conformant", "the bias stepped without weight decay"),
    (default_optimizer, {"bias_group": {"weight_decay": 0}}, "not_conformant",
     "parameter group is not applied")])
def test_a_bias_group_conforms_only_as_declared(sgdc: Any, optimizer_fn: Any, recipe: Any,
                                                verdict: str, named: str | None) -> None:
    torch.set_num_threads(1)
    declarations = dict(sgdc_adapter.torch.DECLARATIONS)
    if recipe is not None:
        declarations["recipe"] = recipe
    result = sgdc.run(TorchHarness(linear, optimizer_fn=optimizer_fn), name="torch-groups",
                      cases=20, properties=("accuracy",), **declarations)
    assert result.verdict == verdict, result.text
    if named is not None:
        assert named in result.text, result.text


def test_the_bias_group_takes_the_cases_lr() -> None:
    case = parsed(with_momentum(make_case(2, 1, 1), weight_decay=0.5, buffer=False))
    case.bias_lr = F32(0.25)
    case.bias_weight_decay = F32(0)
    harness = TorchHarness(linear, optimizer_fn=no_decay_on_bias)
    out = harness(case)
    g = out["grad_bias"]
    expected = case.bias - F32(0.25) * g  # a fresh buffer is the (undecayed) gradient
    assert np.allclose(out["bias"], expected, rtol=1e-6, atol=0)


def clipped_step(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss


def test_a_clipped_step_reports_the_gradients_backward_left() -> None:
    # The worked example's gradients are 5 and 3, norm sqrt(34): clipped to 1, the update
    # reads them times 1 / (sqrt(34) + 1e-6), and the reported ones stay 5 and 3.
    msg = step_message(WORKED, 1)[0]
    clipped = sgdc_adapter.parse_case({**msg, "clip_max_norm": sgdc_adapter.encode(
        np.array([1.0], np.float32)), "clip_eps": sgdc_adapter.encode(np.array([1e-6], np.float32))})
    out = TorchHarness(linear, train_step=clipped_step)(clipped)
    assert out["grad_kernel"].tolist() == [[5.0]] and out["grad_bias"].tolist() == [3.0]
    factor = 1.0 / (np.sqrt(34.0) + 1e-6)
    assert abs(float(out["kernel"][0][0]) - (1.0 - 0.1 * 5.0 * factor)) < 1e-6
    # Unclipped, the same step reports .grad as step() starts with it: clipped.
    plain = TorchHarness(linear, train_step=clipped_step)(parsed(WORKED))
    assert abs(float(plain["grad_kernel"][0][0]) - 5.0 * factor) < 1e-6


# Declared and clipping: conformant; clipping undeclared, or declared but not clipping:
# rejected, the report naming which.
@pytest.mark.parametrize("train_step, recipe, verdict, named", [
    (clipped_step, {"clipping": {"max_norm": 1.0, "eps": 1e-6}}, "conformant", None),
    (clipped_step, None, "not_conformant", "scaled as clipping to a global norm"),
    (None, {"clipping": {"max_norm": 1.0, "eps": 1e-6}}, "not_conformant",
     "the declared clipping is not applied")])
def test_clipping_conforms_only_as_declared(sgdc: Any, train_step: Any, recipe: Any,
                                            verdict: str, named: str | None) -> None:
    torch.set_num_threads(1)
    declarations = dict(sgdc_adapter.torch.DECLARATIONS)
    if recipe is not None:
        declarations["recipe"] = recipe
    result = sgdc.run(TorchHarness(linear, train_step=train_step), name="torch-clip",
                      cases=20, properties=("accuracy",), **declarations)
    assert result.verdict == verdict, result.text
    if named is not None:
        assert named in result.text, result.text



def bfloat16_linear(d: int, k: int) -> Any:
    return torch.nn.Linear(d, k).to(torch.bfloat16)


def float16_linear(d: int, k: int) -> Any:
    return torch.nn.Linear(d, k).to(torch.float16)


def bfloat16_step(model: Any, optimizer: Any, x: Any, y: Any) -> Any:
    """The usual step, its inputs cast to bfloat16 as FSDP2's cast_forward_inputs does."""
    optimizer.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x.to(torch.bfloat16)).float(), y)
    loss.backward()
    optimizer.step()
    return loss


@pytest.mark.parametrize("model_fn, precision, message", [
    (bfloat16_linear, None, "the Linear's weight is torch.bfloat16; the suite tests float32 "
                            "parameters unless a precision is declared"),
    (float16_linear, {"param_dtype": "bfloat16"},
     "the Linear's weight is torch.float16; the suite tests parameters stored in float32 or a "
     "dtype the declared precision names (float32, bfloat16)"),
])
def test_a_narrower_linear_needs_a_precision_naming_its_dtype(model_fn: Any, precision: Any,
                                                               message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        TorchHarness(model_fn, precision=precision)(parsed(WORKED))


def bfloat16_values(a: np.ndarray) -> bool:
    """Whether every float32 value of `a` is a bfloat16 one (its low 16 bits zero)."""
    return a.dtype == F32 and not (a.view(np.uint32) & 0xFFFF).any()


def as_bfloat16(a: np.ndarray, transposed: bool = False) -> Any:
    return torch.from_numpy(np.ascontiguousarray(a.T if transposed else a)).to(torch.bfloat16)


@pytest.mark.parametrize("case", [
    with_adam(make_case(4, 3, 2, step=5, lr=0.01, seed=7), weight_decay=0.01, seed=8),
    with_momentum(make_case(4, 3, 2, seed=9), momentum=0.5, seed=10),
])
def test_bfloat16_parameters_and_state_are_loaded_rounded_and_read_widened(
        case: dict[str, Any]) -> None:
    harness = TorchHarness(bfloat16_linear, train_step=bfloat16_step,
                           precision={"param_dtype": torch.bfloat16,
                                      "master_dtype": torch.bfloat16})
    got = harness(parsed(case))
    for key in ("kernel", "bias", "grad_kernel", "grad_bias", "momentum_kernel", "momentum_bias",
                "second_moment_kernel", "second_moment_bias"):
        assert key not in got or bfloat16_values(got[key]), key
    # The same step by hand: the case rounded to bfloat16, the state in bfloat16 (as
    # torch.optim makes it for bfloat16 parameters).
    c = parsed(case)
    model = bfloat16_linear(c.d, c.k)
    with torch.no_grad():
        model.weight.copy_(as_bfloat16(c.kernel, transposed=True))
        model.bias.copy_(as_bfloat16(c.bias))
    params = {"kernel": model.weight, "bias": model.bias}
    optimizer = default_optimizer(list(params.values()), c.optimizer)
    optimizer.param_groups[0]["lr"] = float(c.lr)
    buffer = "exp_avg" if case["optimizer"] == "adam" else "momentum_buffer"
    for ours, p in params.items():
        transposed = ours == "kernel"
        state = {buffer: as_bfloat16(getattr(c, "momentum_" + ours), transposed)}
        if case["optimizer"] == "adam":
            state["step"] = torch.tensor(float(c.step))
            state["exp_avg_sq"] = as_bfloat16(getattr(c, "second_moment_" + ours), transposed)
        optimizer.state[p] = state
    bfloat16_step(model, optimizer, torch.from_numpy(c.x), torch.from_numpy(c.y))
    for ours, p in params.items():
        transposed = ours == "kernel"
        for key, t in ((ours, p.detach()), ("momentum_" + ours, optimizer.state[p][buffer])):
            want = t.float().numpy()
            want = np.ascontiguousarray(want.T if transposed else want)
            assert got[key].tobytes() == want.tobytes(), key
