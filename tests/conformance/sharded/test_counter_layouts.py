"""`sgd-conformance storage --counter torch|optax|nnx` counts the step counters each
framework really keeps for a Linear layer: the bytes of every integer or scalar counter
in torch.optim's, optax's and nnx.Optimizer's state after one step, measured here.

    conformance/python/run-adapter tests/conformance/sharded/test_counter_layouts.py CLI

Exits 77 (skipped) when neither torch nor JAX is installed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from typing import Callable


def cli_counter_bytes(cli: str, layout: str, optimizer: str) -> int:
    out = subprocess.run(
        [cli, "storage", "--d", "3", "--k", "4", "--shards", "1", "--optimizer", optimizer,
         "--counter", layout],
        capture_output=True, text=True, check=True).stdout
    row = re.search(r"^\s+0\s+\d+\s+\d+\s+\d+ B\s+\d+ B\s+\d+ B\s+(\d+) B", out, re.M)
    if not row:
        raise SystemExit(f"no shard row in the storage report:\n{out}")
    return int(row.group(1))


def torch_counter_bytes(optimizer: str) -> int:
    import torch

    model = torch.nn.Linear(3, 4)
    make: dict[str, Callable[[], torch.optim.Optimizer]] = {
        "sgd": lambda: torch.optim.SGD(model.parameters(), lr=0.1),
        "momentum": lambda: torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9),
        "adam": lambda: torch.optim.Adam(model.parameters()),
        "adamw": lambda: torch.optim.AdamW(model.parameters()),
    }
    opt = make[optimizer]()
    model(torch.ones(2, 3)).sum().backward()
    opt.step()
    # A counter is every state entry that is not parameter-sized.
    return sum(v.numel() * v.element_size() for state in opt.state.values()
               for k, v in state.items() if torch.is_tensor(v) and v.dim() == 0)


def optax_tx(optimizer: str):  # type: ignore[no-untyped-def]
    import optax

    return {"sgd": lambda: optax.sgd(0.1), "momentum": lambda: optax.sgd(0.1, momentum=0.9),
            "adam": lambda: optax.adam(1e-3), "adamw": lambda: optax.adamw(1e-3)}[optimizer]()


def scalar_bytes(tree: object) -> int:
    import jax

    return sum(leaf.size * leaf.dtype.itemsize for leaf in jax.tree.leaves(tree)
               if getattr(leaf, "ndim", 1) == 0)


def optax_counter_bytes(optimizer: str) -> int:
    import jax.numpy as jnp

    return scalar_bytes(optax_tx(optimizer).init({"kernel": jnp.ones((3, 4)),
                                                  "bias": jnp.ones(4)}))


def nnx_counter_bytes(optimizer: str) -> int:
    from flax import nnx

    model = nnx.Linear(3, 4, rngs=nnx.Rngs(0))
    opt = nnx.Optimizer(model, optax_tx(optimizer), wrt=nnx.Param)
    return scalar_bytes(nnx.state(opt, nnx.optimizer.OptState))


def main() -> int:
    cli = sys.argv[1]
    frameworks: list[tuple[str, Callable[[str], int]]] = []
    try:
        import torch  # noqa: F401

        frameworks.append(("torch", torch_counter_bytes))
    except ImportError:
        pass
    try:
        import optax  # noqa: F401

        frameworks.append(("optax", optax_counter_bytes))
        frameworks.append(("nnx", nnx_counter_bytes))
    except ImportError:
        pass
    if not frameworks:
        print("skipped: neither torch nor optax is installed", file=sys.stderr)
        return 77
    wrong = 0
    for layout, measure in frameworks:
        for optimizer in ("sgd", "momentum", "adam", "adamw"):
            real, counted = measure(optimizer), cli_counter_bytes(cli, layout, optimizer)
            ok = real == counted
            wrong += not ok
            print(f"{'ok' if ok else 'WRONG':5} --counter {layout:5} --optimizer {optimizer:8} "
                  f"measured {real} B, storage counts {counted} B")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
