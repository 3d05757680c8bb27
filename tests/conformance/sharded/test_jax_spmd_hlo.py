"""The JAX SPMD adapter is really sharded: its compiled HLO has the collectives, and its
arrays are placed one part per device.

    conformance/python/run-adapter tests/conformance/sharded/test_jax_spmd_hlo.py

Exits 77 (skipped) when JAX is not installed in the interpreter that runs it.
"""

from __future__ import annotations

import importlib.util
import os
import re
import sys
import unittest
from types import ModuleType

ADAPTER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                       "conformance", "python", "adapters", "jax_spmd_step.py")


def load_adapter(path: str) -> ModuleType:
    """The adapter script at `path`, imported as a module (its main() is not run)."""
    spec = importlib.util.spec_from_file_location("jax_spmd_step", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


if importlib.util.find_spec("jax") is None:
    print("skipped: jax is not installed", file=sys.stderr)
    sys.exit(77)
spmd = load_adapter(ADAPTER)  # sets the device count before JAX initialises
import jax  # noqa: E402
import numpy as np  # noqa: E402

COLLECTIVE = re.compile(r"\b(all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all)(-start)?\(")


def compiled_hlo(n: int, d: int, k: int, shards: int, mutant: str | None = None) -> str:
    """The adapter's step for (n, d, k, shards) compiled, partitioned, as HLO text."""
    with spmd.harness(spmd=True, declarations=spmd.OPTIMIZERS, **spmd.step_parts(mutant)) as h:
        return str(h.hlo(n, d, k, shards))


def collectives(hlo: str) -> set[str]:
    return {m.group(1) for m in COLLECTIVE.finditer(hlo)}


class Case:
    def __init__(self, n: int, d: int, k: int, shards: int, seed: int = 0) -> None:
        rng = np.random.default_rng(seed)
        self.n, self.d, self.k, self.num_shards, self.step = n, d, k, shards, 0
        self.lr = np.float32(0.1)
        self.kernel = rng.standard_normal((d, k)).astype(np.float32)
        self.bias = rng.standard_normal(k).astype(np.float32)
        self.x = rng.standard_normal((n, d)).astype(np.float32)
        self.y = rng.standard_normal((n, k)).astype(np.float32)
        self.optimizer: object = None  # plain SGD, fresh state
        self.momentum_kernel = self.momentum_bias = None
        self.second_moment_kernel = self.second_moment_bias = None
        self.fresh_state = True


class HloCollectives(unittest.TestCase):
    def test_one_shard_has_no_collectives(self) -> None:
        self.assertEqual(collectives(compiled_hlo(5, 3, 2, 1)), set())

    def test_sharded_step_gathers_parameters_and_reduces_gradients(self) -> None:
        # Shapes that divide S and shapes that do not: N = 5 rows, the kernel's D = 8 rows
        # split over S (input_chunks). (Where S > D some devices hold no rows, and XLA
        # gathers the parts through an all-reduce of zero-padded blocks instead.)
        for shards in range(2, spmd.MAX_DEVICES + 1):
            with self.subTest(shards=shards):
                found = collectives(compiled_hlo(5, 8, 2, shards))
                self.assertIn("all-gather", found, "parameters are not gathered")
                self.assertTrue(found & {"all-reduce", "reduce-scatter"},
                                f"no reduction across shards: {found}")

    def test_replica_mutant_gathers_nothing(self) -> None:
        found = collectives(compiled_hlo(5, 8, 2, 4, "full_replica"))
        self.assertNotIn("all-gather", found)


def served() -> object:
    """The adapter's step, as the harness serves it, with the layout reported."""
    return spmd.harness(spmd=True, layout=True, declarations=spmd.OPTIMIZERS,
                        **spmd.step_parts(None))


class Placement(unittest.TestCase):
    def test_each_device_holds_its_part(self) -> None:
        # input_chunks: the kernel's D = 3 rows and the bias's K = 4 in ceil(size / S)
        # chunks, the last shorter, none after.
        h = served()
        for shards in range(1, spmd.MAX_DEVICES + 1):
            with self.subTest(shards=shards):
                out = h.run(Case(7, 3, 4, shards))

                def chunks(size: int) -> list[int]:
                    c = -(-size // shards)
                    return [max(0, min(c, size - s * c)) for s in range(shards)]
                self.assertEqual([s["kernel"] for s in out["shards"]], [4 * r for r in chunks(3)])
                self.assertEqual([s["bias"] for s in out["shards"]], chunks(4))
        h.close()

    def test_parts_are_on_distinct_devices(self) -> None:
        # Where the shape divides the mesh, the step's updated kernel comes back as one
        # array split over the S devices, each holding its D / S rows.
        h = served()
        c = Case(8, 8, 8, 1)
        layer = h.layer(8, 8)
        for shards in (1, 2, 4, 8):
            with self.subTest(shards=shards):
                state = layer.state({"kernel": c.kernel, "bias": c.bias, "step": 0,
                                     "hyperparams.learning_rate": c.lr}, "sgd")
                leaves = h.compiled((8, 8, 8, shards))(layer.graphdef, state, c.x, c.y)[3]
                kernel = leaves[layer.index("kernel")]
                parts = {shard.device: shard.data.shape for shard in kernel.addressable_shards}
                self.assertEqual(len(parts), shards, "parts are not on distinct devices")
                self.assertEqual(set(parts.values()), {(8 // shards, 8)})
        h.close()

    def test_adam_state_is_sharded_with_the_parameters(self) -> None:
        # Both moments laid out as the parameters: each device holds twice its part.
        import sgdc_adapter
        h = served()
        for shards in range(1, spmd.MAX_DEVICES + 1):
            with self.subTest(shards=shards):
                c = Case(7, 3, 4, shards)
                c.optimizer = sgdc_adapter.AdamOptimizer(
                    kind="adam", b1=np.float32(0.9), b2=np.float32(0.999), eps=np.float32(1e-8),
                    eps_root=np.float32(0), weight_decay=np.float32(0), decay="coupled")
                out = h.run(c)
                for part in out["shards"]:
                    self.assertEqual((part["state_kernel"], part["state_bias"]),
                                     (2 * part["kernel"], 2 * part["bias"]))
                # Fresh moments: v' = (1 - b2) g^2.
                g = out["grad_kernel"].astype(np.float64)
                np.testing.assert_allclose(out["second_moment_kernel"],
                                           (1 - np.float64(np.float32(0.999))) * g * g, rtol=1e-5)
        h.close()

    def test_results_match_numpy_for_every_shard_count(self) -> None:
        c = Case(5, 3, 2, 1, seed=1)
        r = c.x.astype(np.float64) @ c.kernel + c.bias - c.y
        grad = 2.0 / (c.n * c.k) * c.x.T @ r
        h = served()
        for shards in range(1, spmd.MAX_DEVICES + 1):
            c.num_shards = shards
            out = h.run(c)
            np.testing.assert_allclose(out["grad_kernel"], grad, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(out["loss"], np.mean(r * r), rtol=1e-5)
        h.close()


if __name__ == "__main__":
    unittest.main()
