"""SecretHeaders with SecretStore: table: the server's headers secret is opened from the table (cached
for max_age), and a missing or unopenable one is a ConfigError naming the server, never the value."""

from __future__ import annotations

import json

import pytest

from foldgate.auth.secret_headers import SecretHeaders
from foldgate.config.tenant import ServerConfig
from foldgate.errors import ConfigError, StoreError

NAME = "/fg/tenants/acme/secrets/github"
SERVER = ServerConfig(name="github", url="https://gh.example/mcp", headers={"x-a": "1"}, headers_secret=NAME)


def test_the_opened_secret_is_merged_and_cached() -> None:
    opened: list[str] = []

    def sealed(name: str) -> str | None:
        opened.append(name)
        return json.dumps({"Authorization": "Bearer sk-canary"})

    headers = SecretHeaders(max_age=300, sealed=sealed)
    assert headers(SERVER) == {"x-a": "1", "Authorization": "Bearer sk-canary"}
    assert headers(SERVER)["Authorization"] == "Bearer sk-canary"
    assert opened == [NAME]  # the second call used the cached value


def test_a_missing_or_unopenable_secret_is_a_config_error_without_the_value() -> None:
    with pytest.raises(ConfigError, match=r"server 'github': cannot read its headers secret: no secret"):
        SecretHeaders(sealed=lambda name: None)(SERVER)

    def refused(name: str) -> str | None:
        raise StoreError("KMS cannot unwrap the grant's data key: AccessDeniedException")

    with pytest.raises(ConfigError, match="AccessDeniedException"):
        SecretHeaders(sealed=refused)(SERVER)
    with pytest.raises(ConfigError, match="JSON object of strings") as raised:
        SecretHeaders(sealed=lambda name: json.dumps({"Authorization": 5, "leak": "sk-canary"}))(SERVER)
    assert "sk-canary" not in raised.value.message
