"""Settings -> verifier: off without an issuer, a start-up error without a public URL or with an issuer
the deployment may not reach, and the default tenant only."""

from __future__ import annotations

import pytest

from foldgate.auth.oauth.setup import open_oauth, tenant_oauth_configs
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


def test_tenant_oauth_blocks_come_from_the_live_config_with_the_settings_as_default_fallback() -> None:
    from foldgate.config.source import StaticConfigSource
    from foldgate.config.tenant import parse_tenant_config

    env = {"FOLDGATE_OAUTH_ISSUER": "https://login.example.com/stack", "FOLDGATE_PUBLIC_URL": "https://mcp.example.com",
           "FOLDGATE_DEFAULT_TENANT": "acme", "FOLDGATE_TENANT_CLAIM": "foldgate_tenant"}  # fmt: skip
    source = StaticConfigSource({"acme": parse_tenant_config({}), "beta": parse_tenant_config(
        {"oauth": {"issuer": "https://login.example.com/beta"}})})  # fmt: skip
    verifier = open_oauth(Settings.from_env(env), source)
    assert verifier is not None
    assert verifier.tenant_claim == "foldgate_tenant"
    assert [verifier.config(t) and verifier.config(t).issuer for t in ("acme", "beta", "gone")] == [  # type: ignore[union-attr]
        "https://login.example.com/stack", "https://login.example.com/beta", None]  # fmt: skip
    # A live change applies on the next lookup: the tenant's own block wins over the stack's issuer.
    source.configs["acme"] = parse_tenant_config({"oauth": {"issuer": "https://idp.example.org"}})
    assert verifier.config("acme").issuer == "https://idp.example.org"  # type: ignore[union-attr]


def test_a_tenants_loopback_issuer_is_rechecked_against_the_process_policy() -> None:
    from foldgate.config.source import StaticConfigSource
    from foldgate.config.tenant import parse_tenant_config

    source = StaticConfigSource(
        {"default": parse_tenant_config({"oauth": {"issuer": "http://127.0.0.1:9000"}})}
    )
    env = {"FOLDGATE_PUBLIC_URL": "https://mcp.example.com"}
    assert open_oauth(Settings.from_env(env), source).config("default") is not None  # type: ignore[union-attr]
    cloud = open_oauth(Settings.from_env({**env, "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "false"}), source)
    assert cloud is not None
    assert cloud.config("default") is None
    assert not cloud.accepts()


def test_the_stacks_cognito_settings_become_a_client_id_mapping() -> None:
    pool = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_AbCdEf123"
    env = {"FOLDGATE_OAUTH_ISSUER": pool, "FOLDGATE_PUBLIC_URL": "https://mcp.example.com",
           "FOLDGATE_OAUTH_AUDIENCE": "machine1, user2", "FOLDGATE_OAUTH_AUDIENCE_CLAIM": "client_id",
           "FOLDGATE_OAUTH_SCOPE_PREFIX": "https://mcp.example.com/"}  # fmt: skip
    verifier = open_oauth(Settings.from_env(env))
    assert verifier is not None
    config = verifier.config("default")
    assert config is not None
    assert (config.audience, config.mapping.audience_claim) == (["machine1", "user2"], "client_id")
    assert config.mapping.scope_prefix == "https://mcp.example.com/"
    with pytest.raises(ConfigError, match="allowed client ids"):
        open_oauth(Settings.from_env({**env, "FOLDGATE_OAUTH_AUDIENCE": ""}))


def test_unknown_tenants_are_not_looked_up_on_every_request() -> None:
    from foldgate.config.source import StaticConfigSource
    from foldgate.config.tenant import TenantConfig

    class Counting(StaticConfigSource):
        def __init__(self) -> None:
            super().__init__({})
            self.gets = 0

        def get(self, tenant: str, *, force: bool = False) -> TenantConfig:
            self.gets += 1
            return super().get(tenant, force=force)

    source = Counting()
    verifier = open_oauth(Settings.from_env({"FOLDGATE_PUBLIC_URL": "https://mcp.example.com"}), source)
    assert verifier is not None
    for _ in range(5):
        assert verifier.config("default") is None
        assert verifier.config("made-up") is None
    assert source.gets == 2


def test_the_default_tenants_sign_in_client_comes_from_the_settings() -> None:
    env = {"FOLDGATE_OAUTH_ISSUER": "https://login.example.com", "FOLDGATE_PUBLIC_URL": "https://mcp.example.com",
           "FOLDGATE_OAUTH_LOGIN_CLIENT_ID": "foldgate-connect"}  # fmt: skip
    config = tenant_oauth_configs(Settings.from_env(env), None)("default")
    assert config is not None
    assert config.login is not None
    assert config.login.client_id == "foldgate-connect"
    without = tenant_oauth_configs(Settings.from_env({**env, "FOLDGATE_OAUTH_LOGIN_CLIENT_ID": ""}), None)
    assert (config := without("default")) is not None
    assert config.login is None
