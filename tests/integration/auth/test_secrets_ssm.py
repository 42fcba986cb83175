"""Cloud secrets from SecureString parameters (moto_server): read, and fail closed when missing."""

from __future__ import annotations

import uuid
from typing import Any

import boto3
import pytest

from foldgate.auth.secrets import load_secret, secret_parameter
from foldgate.config.settings import Settings
from foldgate.errors import ConfigError
from foldgate.model.agent_token import TokenHasher


@pytest.fixture
def ssm(moto_endpoint: str) -> Any:
    return boto3.client("ssm")


@pytest.fixture
def settings(tmp_path: Any) -> Settings:
    prefix = f"/fg-{uuid.uuid4().hex[:8]}"
    return Settings(config_source="ssm", config_prefix=prefix, sqlite_path=str(tmp_path / "db.sqlite3"))


def test_secure_strings_are_read(ssm: Any, settings: Settings) -> None:
    ssm.put_parameter(
        Name=f"{settings.config_prefix}/secrets/token-hmac-key", Value="t" * 64, Type="SecureString"
    )
    ssm.put_parameter(
        Name=f"{settings.config_prefix}/secrets/operator-key", Value="o" * 40, Type="SecureString"
    )
    assert load_secret(settings, "token") == b"t" * 64
    assert load_secret(settings, "operator") == b"o" * 40
    TokenHasher(load_secret(settings, "token"))


def test_missing_parameter_fails_closed_naming_it(ssm: Any, settings: Settings, tmp_path: Any) -> None:
    name = secret_parameter(settings, "token")
    assert name == f"{settings.config_prefix}/secrets/token-hmac-key"
    with pytest.raises(ConfigError, match=name) as info:
        load_secret(settings, "token")
    assert "SecureString" in info.value.message
    with pytest.raises(ConfigError, match=secret_parameter(settings, "operator")):
        load_secret(settings, "operator")
    assert list(tmp_path.iterdir()) == []  # no local key invented in the cloud


def test_a_plain_string_parameter_is_refused(ssm: Any, settings: Settings) -> None:
    ssm.put_parameter(Name=f"{settings.config_prefix}/secrets/token-hmac-key", Value="t" * 64, Type="String")
    with pytest.raises(ConfigError, match="must be a SecureString"):
        load_secret(settings, "token")


def test_settings_win_over_parameters(ssm: Any, settings: Settings) -> None:
    ssm.put_parameter(
        Name=f"{settings.config_prefix}/secrets/token-hmac-key", Value="t" * 64, Type="SecureString"
    )
    explicit = settings.model_copy(update={"token_secret": "from-the-environment-123"})
    assert load_secret(explicit, "token") == b"from-the-environment-123"
