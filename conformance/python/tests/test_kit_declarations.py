"""Declarations are validated before anything is served: a bad one raises ValueError
naming the bad value."""

from __future__ import annotations

from typing import Any

import pytest

import sgdc_adapter
from fakesuite import numpy_step


def batch(cases: list[sgdc_adapter.Case]) -> list[Any]:
    return [numpy_step(c) for c in cases]


@pytest.mark.parametrize("counter", [("int32", "wrap"), ("int32", "saturate"), ("uint32", "wrap"),
                                     ("int64", "saturate"), ("float32", "saturate"),
                                     ("float64", "saturate"), ["uint32", "saturate"]])
def test_valid_counters(counter: Any) -> None:
    adapter = sgdc_adapter.Adapter(numpy_step, name="a", version="0",
                                   capabilities=("step_counter",), counter=counter)
    assert adapter.hello["counter"] == {"dtype": counter[0], "at_end": counter[1]}


@pytest.mark.parametrize("counter, message", [
    (("int16", "wrap"), "counter dtype 'int16' is not one of int32, uint32, int64, float32, float64"),
    (("int64", "clamp"), "counter at_end 'clamp' is not 'wrap' or 'saturate'"),
    (("float32", "wrap"), "counter ('float32', 'wrap'): a float counter stops at its largest value "
                          "(16777216); declare 'saturate'"),
    (("float64", "wrap"), "a float counter stops at its largest value (9007199254740992)"),
    ("int64", "counter must be a pair (dtype, at_end), e.g. ('int64', 'saturate'); got 'int64'"),
    (("int64",), "counter must be a pair"),
    ({"dtype": "int64", "at_end": "wrap"}, "counter must be a pair"),
])
def test_invalid_counters(counter: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        sgdc_adapter.Adapter(numpy_step, name="a", version="0", capabilities=("step_counter",),
                             counter=counter)
    assert message in str(info.value)


def test_a_counter_needs_the_step_counter_capability() -> None:
    with pytest.raises(ValueError, match="without the 'step_counter' capability"):
        sgdc_adapter.Adapter(numpy_step, name="a", version="0", counter=("int64", "wrap"))


def test_largest_counter_values() -> None:
    assert sgdc_adapter.COUNTER_LARGEST == {"int32": 2**31 - 1, "uint32": 2**32 - 1,
                                            "int64": 2**63 - 1, "float32": 2**24, "float64": 2**53}


@pytest.mark.parametrize("kwargs, message", [
    ({}, "give exactly one of step"),
    ({"step": numpy_step, "step_batch": batch, "max_batch": 2}, "give exactly one of step"),
    ({"step": numpy_step, "max_batch": 4}, "max_batch 4 needs step_batch"),
    ({"step_batch": batch}, "serving step_batch needs max_batch"),
    ({"step_batch": batch, "max_batch": 0}, "max_batch must be an integer in 1..64 (max_in_flight), got 0"),
    ({"step_batch": batch, "max_batch": 65}, "got 65"),
    ({"step_batch": batch, "max_batch": True}, "got True"),
    ({"step": "not callable"}, "step must be callable"),
    ({"step": numpy_step, "capabilities": ("grads", "telepathy")}, "unknown capabilities ['telepathy']"),
    ({"step": numpy_step, "subnormals": "daz"}, "subnormals must be 'ieee' or 'ftz', got 'daz'"),
    ({"step": numpy_step, "unit_roundoff": 0}, "unit_roundoff must lie in (0, 1), got 0"),
    ({"step": numpy_step, "max_shards": 0}, "max_shards must be a positive integer, got 0"),
])
def test_invalid_declarations(kwargs: dict[str, Any], message: str) -> None:
    step = kwargs.pop("step", None)
    with pytest.raises(ValueError) as info:
        sgdc_adapter.Adapter(step, name="a", version="0", **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize("placement", sgdc_adapter.PLACEMENTS)
def test_placement_is_sent_in_the_hello(fake_suite: Any, placement: str) -> None:
    suite = fake_suite(numpy_step, capabilities=("grads", "shard_layout"), sharded=True,
                       placement=placement)
    assert suite.hello()["placement"] == placement


def test_no_placement_declared_sends_none() -> None:
    adapter = sgdc_adapter.Adapter(numpy_step, name="a", version="0", capabilities=("shard_layout",))
    assert "placement" not in adapter.hello


@pytest.mark.parametrize("kwargs, message", [
    ({"placement": "rows"}, "placement must be one of flat, output_chunks, input_chunks, got 'rows'"),
    ({"placement": "Flat"}, "got 'Flat'"),
    ({"placement": 0}, "got 0"),
    ({"placement": "output_chunks", "capabilities": ("grads",)},
     "placement 'output_chunks' is declared without the 'shard_layout' capability"),
])
def test_invalid_placements(kwargs: dict[str, Any], message: str) -> None:
    kwargs.setdefault("capabilities", ("grads", "shard_layout"))
    with pytest.raises(ValueError) as info:
        sgdc_adapter.Adapter(numpy_step, name="a", version="0", **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize("fmt, sent", [
    ("tf32", "tf32"), ("bfloat16", "bfloat16"),
    ({"fraction_bits": 7, "min_exponent": -126, "max_exponent": 127},
     {"fraction_bits": 7, "min_exponent": -126, "max_exponent": 127}),
])
def test_compute_format_is_sent_and_the_unit_roundoff_left_to_it(fmt: Any, sent: Any) -> None:
    hello = sgdc_adapter.Adapter(numpy_step, name="a", version="0", compute_format=fmt).hello
    assert hello["compute_format"] == sent
    assert "unit_roundoff" not in hello
    both = sgdc_adapter.Adapter(numpy_step, name="a", version="0", compute_format=fmt,
                                unit_roundoff=2**-6).hello
    assert both["unit_roundoff"] == 2**-6


def test_float32_by_default() -> None:
    hello = sgdc_adapter.Adapter(numpy_step, name="a", version="0").hello
    assert "compute_format" not in hello and hello["unit_roundoff"] == 2**-24


@pytest.mark.parametrize("fmt, message", [
    ("fp8", "compute_format must be one of float32, tf32, bfloat16, float16"),
    (7, "compute_format must be a name or a mapping, got 7"),
    ({"fraction_bits": 10, "min_exponent": -14}, "needs exactly the integers"),
    ({"fraction_bits": 1.5, "min_exponent": -14, "max_exponent": 15}, "needs exactly the integers"),
    ({"fraction_bits": 30, "min_exponent": -14, "max_exponent": 15}, "is not narrower than float32"),
    ({"fraction_bits": 10, "min_exponent": 15, "max_exponent": 15}, "is not narrower than float32"),
])
def test_invalid_compute_formats(fmt: Any, message: str) -> None:
    with pytest.raises(ValueError) as info:
        sgdc_adapter.Adapter(numpy_step, name="a", version="0", compute_format=fmt)
    assert message in str(info.value)


@pytest.mark.parametrize("precision, sent", [
    ({"param_dtype": "bfloat16", "reduce_dtype": "float32", "master_dtype": "float32"},
     {"param_dtype": "bfloat16", "reduce_dtype": "float32", "master_dtype": "float32"}),
    ({"master_dtype": "float16", "param_dtype": "float16"},  # sent in the keys' order
     {"param_dtype": "float16", "master_dtype": "float16"}),
    ({"param_dtype": "bfloat16"}, {"param_dtype": "bfloat16"}),  # defaults not filled in
    ({}, {}),
])
def test_precision_is_sent_as_given(precision: dict[str, Any], sent: dict[str, str]) -> None:
    hello = sgdc_adapter.Adapter(numpy_step, name="a", version="0", precision=precision).hello
    assert hello["precision"] == sent and list(hello["precision"]) == list(sent)
    assert "compute_format" not in hello
    assert "unit_roundoff" not in hello  # the suite's, from the stages
    both = sgdc_adapter.Adapter(numpy_step, name="a", version="0", precision=precision,
                                unit_roundoff=2**-6).hello
    assert both["unit_roundoff"] == 2**-6


def test_no_precision_declared_sends_none() -> None:
    assert "precision" not in sgdc_adapter.Adapter(numpy_step, name="a", version="0").hello


@pytest.mark.parametrize("module, dtypes", [
    ("numpy", lambda np: (np.float16, np.dtype("float32"), np.dtype("float16"))),
    ("torch", lambda torch: (torch.float16, torch.float32, torch.bfloat16)),
    ("jax.numpy", lambda jnp: (jnp.float16, jnp.dtype("float32"), jnp.bfloat16)),
])
def test_precision_takes_framework_dtypes_by_name(module: str, dtypes: Any) -> None:
    param, reduce, master = dtypes(pytest.importorskip(module))
    hello = sgdc_adapter.Adapter(numpy_step, name="a", version="0",
                                 precision={"param_dtype": param, "reduce_dtype": reduce,
                                            "master_dtype": master}).hello
    assert hello["precision"] == {"param_dtype": "float16", "reduce_dtype": "float32",
                                  "master_dtype": "float16" if module == "numpy" else "bfloat16"}


@pytest.mark.parametrize("kwargs, message", [
    ({"precision": {"reduce_dtype": "fp8"}},
     "precision.reduce_dtype must be one of float32, bfloat16, float16, got 'fp8'"),
    ({"precision": {"param_dtype": "float64"}},
     "precision.param_dtype must be one of float32, bfloat16, float16, got 'float64'"),
    ({"precision": {"master_dtype": "tf32"}}, "precision.master_dtype must be one of"),
    ({"precision": {"param_dtype": None}}, "precision.param_dtype must be one of float32, "
                                           "bfloat16, float16, got None"),
    ({"precision": {"compute_dtype": "bfloat16"}},
     "precision: unknown key 'compute_dtype'; the keys are param_dtype, reduce_dtype, "
     "master_dtype"),
    ({"precision": "bfloat16"}, "precision must be a mapping with keys param_dtype, "
                                "reduce_dtype, master_dtype; got 'bfloat16'"),
    ({"precision": {"param_dtype": "bfloat16"}, "compute_format": "bfloat16"},
     "precision and compute_format 'bfloat16' are both declared"),
    ({"precision": {}, "compute_format": "tf32"},
     "precision and compute_format 'tf32' are both declared"),
    ({"precision": {"reduce_dtype": "float32"},
      "compute_format": {"fraction_bits": 10, "min_exponent": -14, "max_exponent": 15}},
     "are both declared"),
])
def test_invalid_precisions(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError) as info:
        sgdc_adapter.Adapter(numpy_step, name="a", version="0", **kwargs)
    assert message in str(info.value)


@pytest.mark.parametrize("fmt", ["float32", {"fraction_bits": 23, "min_exponent": -126,
                                             "max_exponent": 127}])
def test_precision_with_a_float32_compute_format(fmt: Any) -> None:
    hello = sgdc_adapter.Adapter(numpy_step, name="a", version="0", compute_format=fmt,
                                 precision={"param_dtype": "bfloat16"}).hello
    assert hello["compute_format"] == fmt and hello["precision"] == {"param_dtype": "bfloat16"}


def test_precision_is_in_the_hello_the_suite_reads(fake_suite: Any) -> None:
    suite = fake_suite(numpy_step, precision={"param_dtype": "bfloat16", "reduce_dtype": "float32"})
    assert suite.hello()["precision"] == {"param_dtype": "bfloat16", "reduce_dtype": "float32"}
