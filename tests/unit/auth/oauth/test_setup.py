"""Settings -> verifier: off without an issuer, a start-up error without a public URL or with an issuer
the deployment may not reach, and the default tenant only."""

from __future__ import annotations

import pytest

from foldgate.auth.oauth.setup import open_oauth
from foldgate.config.settings import Settings
from foldgate.errors import ConfigError


def test_no_issuer_no_verifier() -> None:
    assert open_oauth(Settings.from_env({})) is None
    assert open_oauth(Settings.from_env({"FOLDGATE_OAUTH_ISSUER": ""})) is None


def test_the_issuer_serves_the_default_tenant_with_the_public_url_as_resource() -> None:
    env = {"FOLDGATE_OAUTH_ISSUER": "https://login.example.com", "FOLDGATE_PUBLIC_URL": "https://mcp.example.com/",
           "FOLDGATE_DEFAULT_TENANT": "acme", "FOLDGATE_OAUTH_AUDIENCE": "api://foldgate"}  # fmt: skip
    verifier = open_oauth(Settings.from_env(env))
    assert verifier is not None
    config = verifier.config("acme")
    assert config is not None
    assert config.audience == ["api://foldgate"]
    assert verifier.config("other") is None
    assert verifier.resource("/mcp/all") == "https://mcp.example.com/mcp/all"


def test_a_missing_public_url_is_a_start_up_error() -> None:
    with pytest.raises(ConfigError, match="FOLDGATE_PUBLIC_URL"):
        open_oauth(Settings.from_env({"FOLDGATE_OAUTH_ISSUER": "https://login.example.com"}))


def test_a_loopback_issuer_is_refused_where_private_upstreams_are() -> None:
    env = {"FOLDGATE_OAUTH_ISSUER": "http://127.0.0.1:9000", "FOLDGATE_PUBLIC_URL": "https://mcp.example.com"}
    assert open_oauth(Settings.from_env(env)) is not None
    with pytest.raises(ConfigError, match="private upstreams"):
        open_oauth(Settings.from_env({**env, "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "false"}))
