"""The Flax NNX / JAX SPMD harness (sgdc_adapter.jax): one compiled program per shape
serving every optimizer structure, each structure's result its own chain's; a chain the
user's optimizer_fn cannot build rejected by name while the others serve; state a chain
carries advancing on its own structure's steps alone; torch's dampening through
`dampened_trace` and the `fresh` flag, conforming, and wrong conventions rejected by the
suite ($SGDC_CLI). Skipped without JAX, Flax or optax."""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
import pytest

import sgdc_adapter
from fakesuite import F32, make_case, step_message, with_adagrad, with_adam, with_momentum

jax = pytest.importorskip("jax")
optax = pytest.importorskip("optax")
pytest.importorskip("flax")
import jax.numpy as jnp  # noqa: E402

from sgdc_adapter.jax import (dampened_trace, harness, optax_optimizer,  # noqa: E402
                              served_structures)

MOMENTUM_ALL = sgdc_adapter.MomentumSupport(dampening=True, nesterov=True,
                                            weight_decay=("coupled", "decoupled"))


def parsed(case: dict[str, Any]) -> sgdc_adapter.Case:
    return sgdc_adapter.parse_case(step_message(case, 1)[0])


def every_structure(n: int, d: int, k: int, seed: int = 0) -> list[sgdc_adapter.Case]:
    """Plain SGD, heavy ball, Nesterov, Adam and Adagrad (optax's: eps inside the root;
    a carried sum and a fresh one) cases of one shape."""
    base = make_case(n, d, k, seed=seed)
    return [parsed(base), parsed(with_momentum(base)),
            parsed(with_momentum(base, nesterov=True)), parsed(with_adam(base)),
            parsed(with_adagrad(base, eps=0.0, eps_root=1e-7)),
            parsed(with_adagrad(base, eps=0.0, eps_root=1e-7, initial_accumulator_value=0.1,
                                state=False))]


def test_one_program_per_shape_serves_every_structure() -> None:
    h = harness()
    try:
        cases = every_structure(3, 2, 2) + every_structure(4, 2, 2) + every_structure(3, 2, 2, 1)
        out = h.step_batch(cases)
        assert all(isinstance(o, dict) for o in out), out
        assert sorted(h.programs) == [(3, 2, 2, 1), (4, 2, 2, 1)]
        layer = h.layer(2, 2)
        assert layer.served == ["sgd", "momentum", "nesterov", "adam", "adagrad"]
        for name in ("momentum/trace.kernel", "nesterov/trace.kernel", "adam/mu.bias",
                     "adagrad/sum_of_squares.kernel", "sgd/hyperparams.learning_rate",
                     "adam/hyperparams.learning_rate"):
            assert len(layer.slots[name]) == 1, name
    finally:
        h.close()


def test_each_structure_steps_as_its_own_chain() -> None:
    """The selected updates are the chain's own: the same as optax applied directly."""
    h = harness()
    try:
        for case in every_structure(5, 3, 2):
            out = h.run(case)
            params = {"kernel": jnp.asarray(case.kernel), "bias": jnp.asarray(case.bias)}
            r = case.x.astype(np.float64) @ case.kernel + case.bias - case.y
            grads = {"kernel": 2 / r.size * case.x.T @ r, "bias": 2 / r.size * r.sum(axis=0)}
            grads = {key: jnp.asarray(g, jnp.float32) for key, g in grads.items()}
            o = case.optimizer
            if o is None:
                tx = optax.sgd(case.lr)
            elif isinstance(o, sgdc_adapter.AdamOptimizer):
                tx = optax.adam(case.lr, b1=o.b1, b2=o.b2, eps=o.eps, eps_root=o.eps_root)
            elif isinstance(o, sgdc_adapter.AdagradOptimizer):
                tx = optax.adagrad(case.lr, initial_accumulator_value=o.initial_accumulator_value,
                                   eps=o.eps_root)
            else:
                tx = optax.sgd(case.lr, momentum=o.momentum, nesterov=o.nesterov)
            state = tx.init(params)  # optax's chains: (direction state, EmptyState)
            if isinstance(o, sgdc_adapter.AdamOptimizer):
                state = (state[0]._replace(
                    mu={"kernel": case.momentum_kernel, "bias": case.momentum_bias},
                    nu={"kernel": case.second_moment_kernel, "bias": case.second_moment_bias}),
                    state[1])
            elif isinstance(o, sgdc_adapter.AdagradOptimizer):
                if not case.fresh_state:  # else optax's own init: the initial value
                    state = (state[0]._replace(sum_of_squares={
                        "kernel": case.second_moment_kernel, "bias": case.second_moment_bias}),
                        state[1])
            elif o is not None:
                state = (state[0]._replace(
                    trace={"kernel": case.momentum_kernel, "bias": case.momentum_bias}), state[1])
            updates, new_state = tx.update(grads, state, params)
            expected = optax.apply_updates(params, updates)
            np.testing.assert_allclose(out["kernel"], expected["kernel"], rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["bias"], expected["bias"], rtol=1e-5, atol=1e-6)
            if isinstance(o, sgdc_adapter.AdagradOptimizer):
                for name in ("kernel", "bias"):
                    np.testing.assert_allclose(out["second_moment_" + name],
                                               new_state[0].sum_of_squares[name], rtol=1e-6)
                assert "momentum_kernel" not in out
    finally:
        h.close()


def test_only_the_declared_structures_are_built() -> None:
    """Each structure is one more chain in every program: a declaration of AdamW alone
    builds the Adam chain alone, the default declarations every chain optax serves."""
    adam = sgdc_adapter.AdamSupport(weight_decay=("decoupled",))
    assert served_structures({"adam": adam, "recipe": {"optimizers": ["adam"]}}) == [
        ("adam", False)]
    assert served_structures({"momentum": sgdc_adapter.MomentumSupport()}) == [
        ("sgd", False), ("momentum", False)]
    assert served_structures({"momentum": {"nesterov": True}, "adagrad": {}}) == [
        ("sgd", False), ("momentum", False), ("momentum", True), ("adagrad", False)]
    h = harness(optimizer_fn=adamw_only, declarations={
        "adam": adam, "recipe": {"optimizers": ["adam"]}})
    try:
        base = make_case(4, 3, 2)
        out = h.step_batch([parsed(with_adam(base, decay="decoupled", weight_decay=0.1)),
                            parsed(with_adagrad(base))])
        assert isinstance(out[0], dict), out[0]
        assert isinstance(out[1], sgdc_adapter.RejectCase), out[1]
        assert "Adagrad step, which the harness was not declared to serve" in str(out[1])
        assert h.layer(3, 2).served == ["adam"]
    finally:
        h.close()


def adamw_only(o: Any) -> Any:
    if o.kind != "adam":
        raise NotImplementedError("this model trains with AdamW only")
    return optax.adamw(o.learning_rate, b1=o.b1, b2=o.b2, eps=o.eps, eps_root=o.eps_root,
                       weight_decay=o.decoupled_weight_decay)


def test_a_chain_the_user_cannot_build_is_rejected_by_name_while_the_others_serve() -> None:
    h = harness(optimizer_fn=adamw_only)
    try:
        base = make_case(4, 3, 2)
        adam, sgd, momentum = (parsed(with_adam(base, decay="decoupled", weight_decay=0.1)),
                               parsed(base), parsed(with_momentum(base)))
        out = h.step_batch([adam, sgd, momentum])
        assert isinstance(out[0], dict) and np.all(np.isfinite(out[0]["kernel"]))
        assert not np.array_equal(out[0]["kernel"], adam.kernel)
        for rejected, what in ((out[1], "plain SGD"), (out[2], "momentum (heavy ball)")):
            assert isinstance(rejected, sgdc_adapter.RejectCase), rejected
            assert f"optimizer_fn cannot make the {what} step" in str(rejected)
            assert "this model trains with AdamW only" in str(rejected)
        assert h.layer(3, 2).served == ["adam"]
    finally:
        h.close()


def test_adamw_only_conforms_on_its_recipe(sgdc: Any) -> None:
    sgdc.check_nnx(optimizer_fn=adamw_only, name="adamw-only", cases=5,
                   properties=("accuracy", "update_rule"),
                   adam=sgdc_adapter.AdamSupport(weight_decay=("decoupled",), eps_root=True),
                   recipe={"optimizers": ["adam"]})


class Calls(NamedTuple):
    calls: Any


def count_calls() -> Any:
    """A transformation carrying its own state: how many updates it has made."""
    return optax.GradientTransformation(
        lambda params: Calls(jnp.zeros((), jnp.int32)),
        lambda updates, state, params=None: (updates, Calls(state.calls + 1)))


def test_state_a_chain_carries_advances_only_on_its_own_structure_steps() -> None:
    h = harness(optimizer_fn=lambda o: optax.chain(count_calls(), optax_optimizer(o)))
    try:
        sgd, heavy_ball, nesterov, adam, *_ = every_structure(3, 2, 2)
        out = h.step_batch([heavy_ball, sgd, adam, heavy_ball, nesterov, heavy_ball])
        assert all(isinstance(o, dict) for o in out), out
        layer = h.layer(2, 2)
        paths = [[str(getattr(key, "key", getattr(key, "name", key))) for key in path]
                 for path, _ in jax.tree_util.tree_flatten_with_path(layer.abstract_state)[0]]
        counts = {path[3]: int(layer.current[index]) for index, path in enumerate(paths)
                  if "calls" in path}
        assert counts == {"sgd": 1, "momentum": 3, "nesterov": 1, "adam": 1, "adagrad": 0}
    finally:
        h.close()


def test_dampened_trace_is_torch_momentum() -> None:
    g = {"p": jnp.asarray([2.0, -4.0], jnp.float32)}
    buf = {"p": jnp.asarray([1.0, 1.0], jnp.float32)}
    mu, damp = jnp.float32(0.5), jnp.float32(0.25)
    carried = optax.TraceState(trace=buf)
    out, state = dampened_trace(mu, damp, fresh=0.0).update(g, carried)
    assert np.asarray(state.trace["p"]).tolist() == [0.5 + 1.5, 0.5 - 3.0] == \
        np.asarray(out["p"]).tolist()
    out, state = dampened_trace(mu, damp, fresh=1.0).update(g, carried)  # a new buffer: g
    assert np.asarray(state.trace["p"]).tolist() == [2.0, -4.0]
    out, state = dampened_trace(jnp.float32(0), damp, fresh=0.0).update(g, carried)  # mu = 0
    assert np.asarray(state.trace["p"]).tolist() == [2.0, -4.0]
    out, state = dampened_trace(mu, damp, nesterov=True, fresh=0.0).update(g, carried)
    assert np.asarray(out["p"]).tolist() == [2.0 + 0.5 * 2.0, -4.0 + 0.5 * -2.5]


def torch_momentum(trace: Any) -> Any:
    """An optimizer_fn with `trace(o)` for the momentum direction."""
    def optimizer_fn(o: Any) -> Any:
        if o.kind != "momentum":
            return optax_optimizer(o)
        return optax.chain(optax.add_decayed_weights(o.coupled_weight_decay), trace(o),
                           optax.add_decayed_weights(o.decoupled_weight_decay),
                           optax.scale_by_learning_rate(o.learning_rate))
    return optimizer_fn


DAMPENED = {"optimizers": ["momentum"], "hyperparameters": {"dampening": 0.25}}


def test_dampened_momentum_conforms(sgdc: Any) -> None:
    sgdc.check_nnx(optimizer_fn=torch_momentum(
        lambda o: dampened_trace(o.momentum, o.dampening, o.nesterov, o.fresh)),
        name="nnx-dampened", cases=20, properties=("accuracy", "update_rule"),
        momentum=MOMENTUM_ALL, recipe=DAMPENED)


@pytest.mark.parametrize("trace", [
    # A fresh buffer dampened too (optax's zeros, then mu * 0 + (1 - damp) g).
    lambda o: dampened_trace(o.momentum, o.dampening, o.nesterov, 0.0),
    # The dampening on the wrong term: mu buf + damp g.
    lambda o: dampened_trace(o.momentum, 1 - o.dampening, o.nesterov, o.fresh),
], ids=["fresh-buffer-dampened", "dampening-swapped"])
def test_a_wrong_dampening_convention_is_rejected(sgdc: Any, trace: Any) -> None:
    result = sgdc.run(step_batch=harness(optimizer_fn=torch_momentum(trace)).step_batch,
                      max_batch=32, name="nnx-dampened-wrong", cases=20, properties=("accuracy",),
                      capabilities=("grads",), subnormals="ftz", momentum=MOMENTUM_ALL,
                      recipe=DAMPENED)
    assert result.verdict == "not_conformant", result.text


ADAGRAD_OPTAX = sgdc_adapter.AdagradSupport(weight_decay=("coupled", "decoupled"), eps_root=True)


def test_optax_adagrad_conforms(sgdc: Any) -> None:
    sgdc.check_nnx(name="nnx-adagrad", cases=30, properties=("accuracy", "update_rule"),
                   adagrad=ADAGRAD_OPTAX, recipe={"optimizers": ["adagrad"]})


def rss_outside(o: Any) -> Any:
    """Adagrad with the declared eps_root outside the square root, as torch places it."""
    if o.kind != "adagrad":
        return optax_optimizer(o)

    def update(updates: Any, state: Any, params: Any = None) -> tuple[Any, Any]:
        sums = jax.tree_util.tree_map(lambda g, s: s + g * g, updates, state.sum_of_squares)
        updates = jax.tree_util.tree_map(lambda g, s: g / (jnp.sqrt(s) + o.eps_root), updates,
                                         sums)
        return updates, state._replace(sum_of_squares=sums)

    rss = optax.scale_by_rss(o.initial_accumulator_value, o.eps_root)
    return optax.chain(optax.add_decayed_weights(o.coupled_weight_decay),
                       optax.GradientTransformation(rss.init, update),
                       optax.add_decayed_weights(o.decoupled_weight_decay),
                       optax.scale_by_learning_rate(o.learning_rate))


def test_adagrad_with_its_epsilon_on_the_other_side_is_rejected(sgdc: Any) -> None:
    result = sgdc.run(step_batch=harness(optimizer_fn=rss_outside).step_batch, max_batch=32,
                      name="nnx-adagrad-eps-outside", cases=30, properties=("accuracy",),
                      capabilities=("grads",), subnormals="ftz", adagrad=ADAGRAD_OPTAX,
                      recipe={"optimizers": ["adagrad"]})
    assert result.verdict == "not_conformant", result.text


def test_the_hlo_of_one_shape() -> None:
    h = harness()
    try:
        text = h.hlo(3, 2, 2)
        assert "HloModule" in text
        assert h.programs == [(3, 2, 2, 1)]
    finally:
        h.close()


def test_fresh_is_set_per_case() -> None:
    """`o.fresh` is 1 for a case without state, 0 for one that carries it: a chain that
    adds it to the update shows which it saw."""
    def shows_fresh(o: Any) -> Any:
        if o.kind != "momentum":
            return optax_optimizer(o)
        return optax.chain(optax.trace(o.momentum),
                           optax.GradientTransformation(
                               lambda p: optax.EmptyState(),
                               lambda u, s, p=None: (jax.tree_util.tree_map(
                                   lambda x: jnp.zeros_like(x) + o.fresh, u), s)),
                           optax.scale_by_learning_rate(o.learning_rate))
    h = harness(optimizer_fn=shows_fresh)
    try:
        base = make_case(2, 1, 1, lr=1.0, kernel=[[0]], bias=[0])
        fresh, carried = (h.run(parsed(with_momentum(base, buffer=False))),
                          h.run(parsed(with_momentum(base))))
        assert fresh["kernel"].tolist() == [[-1.0]] and carried["kernel"].tolist() == [[0.0]]
        assert fresh["bias"].dtype == F32
    finally:
        h.close()


def xla_flags_after(code: str, flags: str) -> str:
    """XLA_FLAGS as `code` leaves them in a fresh interpreter that started with `flags`."""
    import os
    import subprocess
    import sys
    env = {**os.environ, "XLA_FLAGS": flags}
    code = f"import os; {code}; print(os.environ['XLA_FLAGS'])"
    return subprocess.run([sys.executable, "-c", code], env=env, check=True,
                          capture_output=True, text=True).stdout.strip()


def test_the_harnesses_compile_quickly_unless_told_otherwise() -> None:
    quick = [f"--{name}={value}" for name, value in sgdc_adapter.jax.QUICK_COMPILE_FLAGS.items()]
    spmd = xla_flags_after("from sgdc_adapter.jax import cpu_devices; cpu_devices(4)", "").split()
    assert spmd == ["--xla_force_host_platform_device_count=4", *quick]
    # Importing the harness sets them before JAX has compiled anything, XLA's own moment
    # to read them.
    nnx_flags = xla_flags_after(
        "from sgdc_adapter.jax import mse_train_step; import jax._src.xla_bridge as xb; "
        "assert not xb.backends_are_initialized()", "")
    assert nnx_flags.split() == quick
    # A flag the user set is theirs: kept, not added a second time.
    theirs = xla_flags_after("from sgdc_adapter.jax import cpu_devices; cpu_devices(4)",
                             "--xla_backend_optimization_level=2").split()
    assert theirs.count("--xla_backend_optimization_level=2") == 1
    assert "--xla_backend_optimization_level=0" not in theirs
    assert "--xla_cpu_use_fusion_emitters=false" in theirs
