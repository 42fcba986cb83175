"""The tenant's oauth block: https issuers only (loopback http only where private upstreams are
allowed), no credentials/query/fragment, sane audiences, asymmetric algorithms only."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.oauth import parse_oauth_config
from foldgate.errors import ConfigError


def test_a_minimal_block_gets_the_defaults() -> None:
    config = parse_oauth_config({"issuer": "https://login.example.com/t1"}, allow_loopback=False)
    assert config.audience is None
    assert config.algorithms == ["RS256", "ES256", "EdDSA"]
    assert config.leeway_seconds == 30


def test_a_single_audience_string_becomes_a_list() -> None:
    config = parse_oauth_config(
        {"issuer": "https://a.example", "audience": "api://foldgate"}, allow_loopback=False
    )
    assert config.audience == ["api://foldgate"]


@pytest.mark.parametrize(
    "issuer",
    [
        "http://login.example.com",
        "ftp://login.example.com",
        "https://user:pw@login.example.com",
        "https://login.example.com?x=1",
        "https://login.example.com#frag",
        "https:///nohost",
        "https://login.example.com:notaport",
        "https://" + "a" * 3000 + ".example",
    ],
)
def test_bad_issuers_are_refused(issuer: str) -> None:
    with pytest.raises(ConfigError, match="issuer"):
        parse_oauth_config({"issuer": issuer}, allow_loopback=True)


@pytest.mark.parametrize(
    "issuer", ["http://127.0.0.1:9000", "http://localhost:9000/realms/x", "http://[::1]:80"]
)
def test_loopback_http_only_when_allowed(issuer: str) -> None:
    assert parse_oauth_config({"issuer": issuer}, allow_loopback=True).issuer == issuer
    with pytest.raises(ConfigError, match="private upstreams"):
        parse_oauth_config({"issuer": issuer}, allow_loopback=False)


@pytest.mark.parametrize(
    "block",
    [
        {"issuer": "https://a.example", "algorithms": ["HS256"]},
        {"issuer": "https://a.example", "algorithms": ["none"]},
        {"issuer": "https://a.example", "algorithms": []},
        {"issuer": "https://a.example", "audience": []},
        {"issuer": "https://a.example", "audience": [""]},
        {"issuer": "https://a.example", "jwks_uri": "http://169.254.169.254/keys"},
        {"issuer": "https://a.example", "leeway_seconds": 3600},
        {"issuer": "https://a.example", "mapping": [{"claim": "groups", "value": "x", "servers": []}]},
        {"issuer": "https://a.example", "mapping": [{"claim": "groups", "value": "x", "tier": "admin"}]},
        {"issuer": "https://a.example", "unknown": True},
        {"audience": "x"},
    ],
)
def test_invalid_blocks_are_refused_naming_the_field(block: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="invalid oauth"):
        parse_oauth_config(block, allow_loopback=False)


def test_a_sign_in_client_for_per_user_connects_is_optional_and_kept() -> None:
    assert parse_oauth_config({"issuer": "https://a.example"}, allow_loopback=False).login is None
    block = {"issuer": "https://a.example", "login": {"client_id": "foldgate-connect"}}
    config = parse_oauth_config(block, allow_loopback=False)
    assert config.login is not None
    assert config.login.client_id == "foldgate-connect"


@pytest.mark.parametrize(
    "login",
    [
        {},
        {"client_id": ""},
        {"client_id": "has space"},
        {"client_id": "x" * 257},
        {"client_id": "ok", "client_secret": "never in tenant config"},
    ],
)
def test_a_bad_sign_in_client_is_refused_naming_the_field(login: dict[str, Any]) -> None:
    with pytest.raises(ConfigError, match="login"):
        parse_oauth_config({"issuer": "https://a.example", "login": login}, allow_loopback=False)
