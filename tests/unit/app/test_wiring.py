"""``optional_secret``: a Parameter Store secret is read once per Settings object (one build's parts
share the read), a new Settings reads again, a failed read is retried, and local secrets are never kept."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from foldgate.app import wiring
from foldgate.auth import secrets
from foldgate.config.settings import Settings
from foldgate.errors import ConfigError


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each load_secret call's secret name; the value is 32 bytes per call (so a re-read shows)."""
    seen: list[str] = []

    def load(settings: Settings, name: str, **_: object) -> bytes:
        seen.append(name)
        if settings.config_prefix == "/missing":
            raise ConfigError("SecureString parameter /missing/secrets/token-hmac-key is missing")
        return bytes([len(seen)]) * 32

    monkeypatch.setattr(secrets, "load_secret", load)
    return seen


def test_one_read_per_settings_object_in_the_cloud(reads: list[str]) -> None:
    cloud = Settings(config_source="table", store="dynamodb")
    first = wiring.optional_secret(cloud, "token")
    assert wiring.optional_secret(cloud, "token") == first
    assert wiring.connect_link_secret(cloud) == first
    assert reads == ["token"]
    assert wiring.optional_secret(cloud, "operator") != first
    assert reads == ["token", "operator"]
    again = Settings(config_source="table", store="dynamodb")
    assert wiring.optional_secret(again, "token") != first  # another build reads the parameter again
    assert reads == ["token", "operator", "token"]


def test_the_kept_secret_goes_with_its_settings(reads: list[str]) -> None:
    cloud = Settings(config_source="table", store="dynamodb")
    wiring.optional_secret(cloud, "token")
    key = (id(cloud), "token")
    assert key in wiring._SSM_SECRETS
    del cloud
    gc.collect()
    assert key not in wiring._SSM_SECRETS


def test_a_failed_read_is_not_kept(reads: list[str]) -> None:
    missing = Settings(config_source="table", store="dynamodb", config_prefix="/missing")
    assert wiring.optional_secret(missing, "token") is None
    assert wiring.optional_secret(missing, "token") is None
    assert reads == ["token", "token"]


def test_local_secrets_are_read_each_time(reads: list[str], tmp_path: Path) -> None:
    local = Settings(sqlite_path=str(tmp_path / "s.sqlite3"))
    wiring.optional_secret(local, "token")
    wiring.optional_secret(local, "token")
    assert reads == ["token", "token"]
