"""Where compiling adapters keep their programs: sgdc_adapter.compilation_cache_dir."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import sgdc_adapter


def test_under_sgdc_cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGDC_CACHE_DIR", str(tmp_path / "cache"))
    path = sgdc_adapter.compilation_cache_dir("jax")
    assert path == str(tmp_path / "cache" / "jax")
    assert os.path.isdir(path)


def test_defaults_to_xdg_cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SGDC_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert sgdc_adapter.compilation_cache_dir("jax") == str(tmp_path / "sgd-conformance" / "jax")


def test_off_compiles_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SGDC_CACHE_DIR", "off")
    assert sgdc_adapter.compilation_cache_dir("jax") is None


class FakeConfig:
    def __init__(self) -> None:
        self.values: dict[str, object] = {}

    def update(self, key: str, value: object) -> None:
        self.values[key] = value


class FakeJax:
    def __init__(self) -> None:
        self.config = FakeConfig()


def test_jax_cache_turned_on_for_every_program(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setenv("SGDC_CACHE_DIR", str(tmp_path))
    jax = FakeJax()
    assert sgdc_adapter.enable_jax_compilation_cache(jax) == str(tmp_path / "jax")  # type: ignore[arg-type]
    assert jax.config.values == {"jax_compilation_cache_dir": str(tmp_path / "jax"),
                                 "jax_persistent_cache_min_compile_time_secs": 0,
                                 "jax_persistent_cache_min_entry_size_bytes": 0}


def test_jax_own_setting_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(tmp_path / "mine"))
    monkeypatch.setenv("SGDC_CACHE_DIR", str(tmp_path / "suite"))
    jax = FakeJax()
    assert sgdc_adapter.enable_jax_compilation_cache(jax) == str(tmp_path / "mine")  # type: ignore[arg-type]
    assert jax.config.values == {}
    assert not (tmp_path / "suite").exists()


def test_jax_cache_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setenv("SGDC_CACHE_DIR", "off")
    jax = FakeJax()
    assert sgdc_adapter.enable_jax_compilation_cache(jax) is None  # type: ignore[arg-type]
    assert jax.config.values == {}
