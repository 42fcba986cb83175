"""FOLDGATE_CACHE_MB: the one budget of an instance's per-tenant caches, in MiB, read once from the
environment; a default sized for the 1,024 MB functions; zero or a non-number is refused."""

from __future__ import annotations

import pytest

from foldgate.app.wiring import open_memory
from foldgate.config.settings import Settings
from foldgate.errors import ConfigError


def test_the_budget_comes_from_foldgate_cache_mb() -> None:
    assert open_memory(Settings.from_env({"FOLDGATE_CACHE_MB": "48"})).budget == 48 * 1024 * 1024


def test_the_default_leaves_the_1024_mb_function_most_of_its_memory() -> None:
    default = Settings.from_env({}).cache_mb
    assert 128 <= default <= 512


@pytest.mark.parametrize("value", ["0", "-5", "lots"])
def test_an_unusable_budget_is_refused(value: str) -> None:
    with pytest.raises(ConfigError, match="cache_mb"):
        Settings.from_env({"FOLDGATE_CACHE_MB": value})
