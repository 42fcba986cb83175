"""SecretHeaders and the OAuth client-secret reader make their Parameter Store provider (an SSM client and
Powertools Parameters) on the first secret read, once, never at construction: every cloud init builds
both, and most instances never read such a secret."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from foldgate.auth import secret_headers
from foldgate.auth.client_secrets import ssm_secret_reader
from foldgate.auth.secret_headers import SecretHeaders
from foldgate.config import ssm
from foldgate.config.tenant import ServerConfig

NAME = "/fg/tenants/acme/secrets/github"
SECRET = ServerConfig(name="github", url="https://gh.example/mcp", headers={"x-a": "1"}, headers_secret=NAME)
PLAIN = ServerConfig(name="plain", url="https://plain.example/mcp", headers={"x-b": "2"})


class _Provider:
    def __init__(self, values: dict[str, str]) -> None:
        self.values = values
        self.reads: list[str] = []

    def get(self, name: str, **_: Any) -> str:
        self.reads.append(name)
        return self.values[name]


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The kind of each provider made (both modules' ssm_provider replaced by one that records it)."""
    kinds: list[str] = []

    def provider(client: Any, memory: Any = None, *, kind: str = "ssm") -> _Provider:
        kinds.append(kind)
        return _Provider({NAME: json.dumps({"Authorization": "Bearer sk-canary"}), "/fg/client": "s3cret"})

    monkeypatch.setattr(secret_headers, "ssm_provider", provider)
    monkeypatch.setattr(ssm, "ssm_provider", provider)
    return kinds


def test_secret_headers_make_the_provider_on_the_first_secret_only(made: list[str]) -> None:
    headers = SecretHeaders(max_age=300)
    assert made == []
    assert headers(PLAIN) == {"x-b": "2"}
    assert made == []  # a server without a headers secret reads nothing
    assert headers(SECRET) == {"x-a": "1", "Authorization": "Bearer sk-canary"}
    assert headers(SECRET)["Authorization"] == "Bearer sk-canary"
    assert made == ["ssm_secret"]


def test_the_client_secret_reader_makes_the_provider_on_the_first_read(made: list[str]) -> None:
    read = ssm_secret_reader(max_age=60)
    assert made == []
    assert asyncio.run(read("/fg/client")) == "s3cret"
    assert asyncio.run(read("/fg/client")) == "s3cret"
    assert made == ["ssm_client_secret"]
