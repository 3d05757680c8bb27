"""The FSDP2 adapter (the kit's FSDP2 harness with torch_fsdp2_step.py's pieces) is
really sharded: the collectives each rank runs in one step, counted by the profiler,
and the part of the layer each rank holds.

    conformance/python/run-adapter tests/conformance/sharded/test_torch_fsdp2_collectives.py

A pytest module; run as a script it runs pytest on itself, and exits 77 (skipped)
when torch >= 2.13 is not installed in the interpreter that runs it.

Per step, on every rank of S >= 2 (the adapter's fully_shard with
reshard_after_forward=True): two all-gathers of the parameters (before the forward,
and again before the backward), one reduce-scatter of the gradients, and one
all-reduce, the loss the adapter reports. With one rank FSDP2 runs no collective of
its own. The replicated_state mutant (no fully_shard, every rank the whole layer)
gathers and scatters nothing: it all-reduces each whole gradient, then the loss.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from typing import Any

ADAPTERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                        "conformance", "python", "adapters")


def _why_not() -> str | None:
    try:
        import torch
    except ImportError as e:
        return f"torch is not installed ({e})"
    version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
    return None if version >= (2, 13) else f"torch {torch.__version__} is older than 2.13"


_reason = _why_not()
if _reason is not None and __name__ == "__main__":
    print(f"skipped: {_reason}", file=sys.stderr)
    sys.exit(77)
import pytest  # noqa: E402

if _reason is not None:
    pytest.skip(_reason, allow_module_level=True)
if __name__ == "__main__":  # as a script: pytest runs this file (importing it anew)
    sys.exit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))

sys.path.insert(0, os.path.abspath(ADAPTERS))  # the ranks import the adapter by this name
import numpy as np  # noqa: E402

import torch_fsdp2_step as fsdp2  # noqa: E402
from sgdc_adapter._codec import Case  # noqa: E402
from sgdc_adapter.torch._fsdp2 import Fsdp2Harness, RankFailure  # noqa: E402

N, D, K = 7, 5, 3  # 7 rows do not split evenly over any S in 2..8 but 7
WORLD = 8
FSDP2_STEP = {"all_gather": 2, "reduce_scatter": 1, "all_reduce": 1}


def kinds(counts: dict[str, int], prefix: str) -> dict[str, int]:
    """Counts of the events named `prefix`..., by kind of collective."""
    out: dict[str, int] = {}
    for name, n in counts.items():
        if not name.startswith(prefix):
            continue
        op = name[len(prefix):]
        kind = ("all_gather" if re.search(r"all_?gather", op) else
                "reduce_scatter" if "reduce_scatter" in op else
                "all_reduce" if re.search(r"all_?reduce", op) else op)
        out[kind] = out.get(kind, 0) + n
    return out


def case(shards: int, n: int = N, d: int = D, k: int = K, seed: int = 0) -> Case:
    rng = np.random.default_rng(seed)
    return Case(n=n, d=d, k=k, num_shards=shards, step=0, lr=np.float32(0.1),
                kernel=rng.standard_normal((d, k)).astype(np.float32),
                bias=rng.standard_normal(k).astype(np.float32),
                x=rng.standard_normal((n, d)).astype(np.float32),
                y=rng.standard_normal((n, k)).astype(np.float32))


def local(answer: dict[str, Any], group: str, name: str) -> np.ndarray:
    """One rank's own part of a parameter (group "params") or gradient ("grads")."""
    return answer[group][name][0]


def chunk_rows(rows: int, shards: int) -> list[int]:
    """Rows per shard of torch.chunk(range(rows), shards), padded with empty shards."""
    c = -(-rows // shards)
    return [max(0, min(c, rows - s * c)) for s in range(shards)]


@pytest.fixture(scope="module")
def ranks() -> Iterator[Fsdp2Harness]:
    world = Fsdp2Harness(fsdp2.model_fn, fsdp2.parallelize_fn, world=WORLD)
    world.start()
    yield world
    world.close()


@pytest.fixture(scope="module")
def replicated() -> Iterator[Fsdp2Harness]:
    world = Fsdp2Harness(fsdp2.model_fn, fsdp2.replicate, world=4)
    world.start()
    yield world
    world.close()


@pytest.mark.parametrize("shards", range(2, WORLD + 1))
def test_each_rank_gathers_twice_scatters_and_reduces_once(ranks: Fsdp2Harness,
                                                            shards: int) -> None:
    answers = ranks.run(case(shards), count_collectives=True)
    assert len(answers) == shards
    for rank, a in enumerate(answers):
        assert kinds(a["collectives"], "c10d::") == FSDP2_STEP, (rank, a["collectives"])
        # gloo ran them: the all-gathers as such, the reduce-scatter as an all-reduce.
        assert kinds(a["collectives"], "gloo:") == {"all_gather": 2, "all_reduce": 2}, (
            rank, a["collectives"])


def test_one_rank_runs_only_the_loss_all_reduce(ranks: Fsdp2Harness) -> None:
    (a,) = ranks.run(case(1), count_collectives=True)
    assert kinds(a["collectives"], "c10d::") == {"all_reduce": 1}, a["collectives"]


@pytest.mark.parametrize("k", [1, 3, 8, 13])
def test_each_rank_holds_its_output_chunk(ranks: Fsdp2Harness, k: int) -> None:
    for shards in range(1, WORLD + 1):
        answers = ranks.run(case(shards, k=k))
        rows = chunk_rows(k, shards)
        assert [local(a, "params", "weight").shape for a in answers] == [(r, D) for r in rows]
        assert [local(a, "params", "bias").shape for a in answers] == [(r,) for r in rows]
        assert [local(a, "grads", "weight").shape for a in answers] == [(r, D) for r in rows]
        assert {a["placements"] for a in answers} == {"(Shard(dim=0),)"}


@pytest.mark.parametrize("shards", range(1, WORLD + 1))
def test_the_step_is_the_baseline(ranks: Fsdp2Harness, shards: int) -> None:
    c = case(shards, seed=shards)
    x, y, w, b = (v.astype(np.float64) for v in (c.x, c.y, c.kernel, c.bias))
    r = x @ w + b - y
    grad = 2 / r.size * x.T @ r
    answers = ranks.run(c)
    kernel = np.concatenate([local(a, "params", "weight") for a in answers]).T
    grad_kernel = np.concatenate([local(a, "grads", "weight") for a in answers]).T
    np.testing.assert_allclose(answers[0]["loss"], np.mean(r * r), rtol=1e-5)
    np.testing.assert_allclose(grad_kernel, grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kernel, w - 0.1 * grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shards", [2, 4])
def test_replicated_state_gathers_nothing(replicated: Fsdp2Harness, shards: int) -> None:
    answers = replicated.run(case(shards), count_collectives=True)
    for a in answers:
        assert kinds(a["collectives"], "c10d::") == {"all_reduce": 3}, a["collectives"]
        assert local(a, "params", "weight").shape == (K, D)


def test_a_failing_rank_is_named_and_the_world_restarts(ranks: Fsdp2Harness) -> None:
    bad = case(3)
    bad.x = np.zeros((N, D + 1), np.float32)  # rows that do not fit the layer
    with pytest.raises(RankFailure, match=r"^rank \d: RuntimeError: "):
        ranks.run(bad)
    assert not ranks.ranks.procs  # stopped: a failed collective leaves the groups unusable
    assert len(ranks.run(case(3))) == 3  # started again


def test_a_rank_that_dies_is_named_and_no_rank_is_left(ranks: Fsdp2Harness) -> None:
    ranks.run(case(4))
    procs = list(ranks.ranks.procs)
    procs[2].kill()  # the other ranks would wait for it in their first collective
    procs[2].join(10)
    with pytest.raises(RankFailure, match=r"^rank 2 died \(.*; exit code -9\)"):
        ranks.run(case(4))
    assert not any(p.is_alive() for p in procs)
    assert len(ranks.run(case(4))) == 4
