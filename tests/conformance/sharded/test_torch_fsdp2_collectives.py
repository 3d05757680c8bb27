"""The FSDP2 adapter is really sharded: the collectives each rank runs in one step,
counted by the profiler, and the part of the layer each rank holds.

    conformance/python/run-adapter tests/conformance/sharded/test_torch_fsdp2_collectives.py

A pytest module; run as a script it runs pytest on itself, and exits 77 (skipped)
when torch >= 2.13 is not installed in the interpreter that runs it.

Per step, on every rank of S >= 2 (the adapter's fully_shard with
reshard_after_forward=True): two all-gathers of the parameters (before the forward,
and again before the backward), one reduce-scatter of the gradients, and one
all-reduce, the loss the adapter reports. With one rank FSDP2 runs no collective of
its own. The replicated_state mutant (HSDP on an (S, 1) mesh) gathers and scatters
nothing: it all-reduces whole gradients.
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

N, D, K = 7, 5, 3  # 7 rows do not split evenly over any S in 2..8 but 7
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


def job(n: int = N, d: int = D, k: int = K, seed: int = 0) -> dict[str, Any]:
    rng = np.random.default_rng(seed)
    return {"x": rng.standard_normal((n, d)).astype(np.float32),
            "y": rng.standard_normal((n, k)).astype(np.float32),
            "kernel": rng.standard_normal((d, k)).astype(np.float32),
            "bias": rng.standard_normal(k).astype(np.float32), "lr": 0.1,
            "count_collectives": True}


def chunk_rows(rows: int, shards: int) -> list[int]:
    """Rows per shard of torch.chunk(range(rows), shards), padded with empty shards."""
    c = -(-rows // shards)
    return [max(0, min(c, rows - s * c)) for s in range(shards)]


@pytest.fixture(scope="module")
def ranks() -> Iterator[fsdp2.Ranks]:
    world = fsdp2.Ranks(fsdp2.MAX_SHARDS)
    yield world
    world.stop()


@pytest.fixture(scope="module")
def replicated() -> Iterator[fsdp2.Ranks]:
    world = fsdp2.Ranks(4, mutant="replicated_state")
    yield world
    world.stop()


@pytest.mark.parametrize("shards", range(2, fsdp2.MAX_SHARDS + 1))
def test_each_rank_gathers_twice_scatters_and_reduces_once(ranks: fsdp2.Ranks,
                                                            shards: int) -> None:
    answers = ranks.run(job(), shards)
    assert len(answers) == shards
    for rank, a in enumerate(answers):
        assert kinds(a["collectives"], "c10d::") == FSDP2_STEP, (rank, a["collectives"])
        # gloo ran them: the all-gathers as such, the reduce-scatter as an all-reduce.
        assert kinds(a["collectives"], "gloo:") == {"all_gather": 2, "all_reduce": 2}, (
            rank, a["collectives"])


def test_one_rank_runs_only_the_loss_all_reduce(ranks: fsdp2.Ranks) -> None:
    (a,) = ranks.run(job(), 1)
    assert kinds(a["collectives"], "c10d::") == {"all_reduce": 1}, a["collectives"]


@pytest.mark.parametrize("k", [1, 3, 8, 13])
def test_each_rank_holds_its_output_chunk(ranks: fsdp2.Ranks, k: int) -> None:
    for shards in range(1, fsdp2.MAX_SHARDS + 1):
        answers = ranks.run(job(k=k), shards)
        rows = chunk_rows(k, shards)
        assert [a["weight"].shape for a in answers] == [(r, D) for r in rows], shards
        assert [a["bias"].shape for a in answers] == [(r,) for r in rows], shards
        assert [a["grad_weight"].shape for a in answers] == [(r, D) for r in rows], shards
        assert {a["placements"] for a in answers} == {"(Shard(dim=0),)"}


@pytest.mark.parametrize("shards", range(1, fsdp2.MAX_SHARDS + 1))
def test_the_step_is_the_baseline(ranks: fsdp2.Ranks, shards: int) -> None:
    j = job(seed=shards)
    x, y, w, b = (j[key].astype(np.float64) for key in ("x", "y", "kernel", "bias"))
    r = x @ w + b - y
    grad = 2 / r.size * x.T @ r
    answers = ranks.run(j, shards)
    kernel = np.concatenate([a["weight"] for a in answers]).T
    grad_kernel = np.concatenate([a["grad_weight"] for a in answers]).T
    np.testing.assert_allclose(answers[0]["loss"], np.mean(r * r), rtol=1e-5)
    np.testing.assert_allclose(grad_kernel, grad, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(kernel, w - 0.1 * grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("shards", [2, 4])
def test_replicated_state_gathers_nothing(replicated: fsdp2.Ranks, shards: int) -> None:
    answers = replicated.run(job(), shards)
    for a in answers:
        assert kinds(a["collectives"], "c10d::") == {"all_reduce": 2}, a["collectives"]
        assert a["weight"].shape == (K, D)


def test_a_failing_rank_is_named_and_the_world_restarts(ranks: fsdp2.Ranks) -> None:
    bad = {**job(), "bias": np.zeros(K + 1, np.float32)}  # a bias that does not fit the layer
    with pytest.raises(fsdp2.RankFailure, match=r"^rank \d: RuntimeError: "):
        ranks.run(bad, 3)
    assert not ranks.procs  # stopped: a failed collective leaves the groups unusable
    assert len(ranks.run(job(), 3)) == 3  # started again


def test_a_rank_that_dies_is_named_and_no_rank_is_left(ranks: fsdp2.Ranks) -> None:
    ranks.run(job(), 4)
    procs = list(ranks.procs)
    procs[2].kill()  # the other ranks would wait for it in their first collective
    procs[2].join(10)
    with pytest.raises(fsdp2.RankFailure, match=r"^rank 2 died \(.*; exit code -9\)"):
        ranks.run(job(), 4)
    assert not any(p.is_alive() for p in procs)
    assert len(ranks.run(job(), 4)) == 4

