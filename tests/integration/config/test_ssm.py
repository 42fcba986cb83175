"""Tenant configs and upstream secrets read from Parameter Store, against moto_server on loopback.

Pins the documented layout ({prefix}/tenants/{t}/config, /servers/{name}, /secrets/{name}), last-good
behaviour for invalid documents, the cache bypass change events use, and that secrets never leak.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest

from foldgate.auth.secret_headers import SecretHeaders
from foldgate.config.ssm import SsmConfigSource, tenant_of_parameter
from foldgate.config.tenant import ServerConfig
from foldgate.errors import ConfigError, NotFoundError


@pytest.fixture
def ssm(moto_endpoint: str) -> Any:
    return boto3.client("ssm", region_name="us-east-1")


@pytest.fixture
def prefix() -> str:
    return f"/fg-{uuid.uuid4().hex[:8]}"


def put(ssm: Any, name: str, value: Any, kind: str = "String") -> None:
    text = value if isinstance(value, str) else json.dumps(value)
    ssm.put_parameter(Name=name, Value=text, Type=kind, Overwrite=True)


def test_config_is_assembled_from_the_tenant_document_and_one_parameter_per_server(
    ssm: Any, prefix: str
) -> None:
    base = f"{prefix}/tenants/acme"
    inline = {"name": "inline", "url": "https://inline.example/mcp"}
    put(ssm, f"{base}/config", {"direct_tool_response_mode": "deferred", "servers": [inline]})
    put(ssm, f"{base}/servers/github", {"url": "https://gh.example/mcp", "headers_secret": "github"})
    put(
        ssm,
        f"{base}/servers/abs",
        {"url": "https://abs.example/mcp", "headers_secret": f"{base}/secrets/tok"},
    )
    config = SsmConfigSource(prefix).get("acme")
    assert config.direct_tool_response_mode == "deferred"
    assert [s.name for s in config.servers] == ["inline", "abs", "github"]
    github = config.server("github")
    assert github is not None
    assert github.headers_secret == f"{base}/secrets/github"  # relative names resolve under the tenant
    absolute = config.server("abs")
    assert absolute is not None
    assert absolute.headers_secret == f"{base}/secrets/tok"  # absolute names only under its own secrets


@pytest.mark.parametrize(
    "secret",
    [
        "/fg/tenants/victim/secrets/github",  # another tenant's secret
        "{prefix}/tenants/victim/secrets/github",
        "{prefix}/secrets/token-hmac-key",  # the stack's own secrets
        "{prefix}/tenants/acme/secrets/../../victim/secrets/github",
        "../victim/secrets/github",
        "{prefix}/tenants/acme/secretsX/github",
        "",
    ],
)
def test_a_secret_reference_outside_the_tenants_own_secrets_is_a_config_error(
    ssm: Any, prefix: str, secret: str
) -> None:
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {})
    put(
        ssm,
        f"{base}/servers/gh",
        {"url": "https://gh.example/mcp", "headers_secret": secret.format(prefix=prefix)},
    )
    source = SsmConfigSource(prefix)
    if not secret:  # an empty name means "no secret", which is fine
        assert source.get("acme").server("gh") is not None
        return
    with pytest.raises(ConfigError, match="'gh': headers_secret must name a parameter under"):
        source.get("acme")


def test_a_stdio_server_is_refused_in_the_cloud_config(ssm: Any, prefix: str) -> None:
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {})
    put(ssm, f"{base}/servers/evil", {"transport": "stdio", "command": ["sh", "-c", "env > /tmp/leak"]})
    with pytest.raises(ConfigError, match="server 'evil': transport 'stdio' runs a program"):
        SsmConfigSource(prefix).get("acme")


def test_the_oauth_block_is_read_and_a_loopback_issuer_is_refused_in_the_cloud(ssm: Any, prefix: str) -> None:
    put(ssm, f"{prefix}/tenants/acme/config", {"oauth": {"issuer": "https://login.example.com/acme"}})
    oauth = SsmConfigSource(prefix).get("acme").oauth
    assert oauth is not None
    assert oauth.issuer == "https://login.example.com/acme"
    put(ssm, f"{prefix}/tenants/beta/config", {"oauth": {"issuer": "http://127.0.0.1:9000"}})
    with pytest.raises(ConfigError, match=r"oauth\.issuer: .*private upstreams"):
        SsmConfigSource(prefix).get("beta")


def test_tenants_are_those_with_a_config_parameter(ssm: Any, prefix: str) -> None:
    for tenant in ("b", "a"):
        put(ssm, f"{prefix}/tenants/{tenant}/config", {})
    put(ssm, f"{prefix}/tenants/c/servers/x", {"url": "https://x.example/mcp"})  # no config: not a tenant
    put(ssm, f"{prefix}-other/tenants/d/config", {})
    assert SsmConfigSource(prefix).tenants() == ["a", "b"]


def test_unknown_tenant_is_not_found(ssm: Any, prefix: str) -> None:
    with pytest.raises(NotFoundError):
        SsmConfigSource(prefix).get("ghost")


def test_an_invalid_document_is_rejected_with_its_parameter_and_field(ssm: Any, prefix: str) -> None:
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {"routing_mode": "schema_deferred"})
    with pytest.raises(ConfigError) as err:
        SsmConfigSource(prefix).get("acme")
    assert base in err.value.message
    assert "direct_tool_response_mode" in err.value.message
    put(ssm, f"{base}/config", "{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        SsmConfigSource(prefix).get("acme")


def test_a_bad_edit_keeps_the_last_good_config(ssm: Any, prefix: str) -> None:
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {"defer_threshold": 7})
    source = SsmConfigSource(prefix, max_age=0)
    good = source.get("acme")
    put(ssm, f"{base}/servers/bad", {"url": "ftp://nope"})
    assert source.get("acme") is good
    assert "streamable_http needs an http(s) url" in source.last_errors["acme"]
    ssm.delete_parameter(Name=f"{base}/servers/bad")
    assert source.get("acme") is good  # same documents again: the very same object
    assert "acme" not in source.last_errors


def test_reads_are_cached_and_force_bypasses_the_cache(ssm: Any, prefix: str) -> None:
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {"defer_threshold": 1})
    source = SsmConfigSource(prefix, max_age=300)
    first = source.get("acme")
    put(ssm, f"{base}/config", {"defer_threshold": 2})
    assert source.get("acme") is first
    assert source.get("acme", force=True).defer_threshold == 2


def test_secret_headers_are_decrypted_and_merged(ssm: Any, prefix: str) -> None:
    name = f"{prefix}/tenants/acme/secrets/github"
    put(ssm, name, {"Authorization": "Bearer s3cret"}, "SecureString")
    server = ServerConfig(
        name="github", url="https://gh.example/mcp", headers={"X-A": "1"}, headers_secret=name
    )
    assert SecretHeaders()(server) == {"X-A": "1", "Authorization": "Bearer s3cret"}
    plain = ServerConfig(name="p", url="https://p.example/mcp", headers={"X-B": "2"})
    assert SecretHeaders()(plain) == {"X-B": "2"}


def test_a_malformed_secret_is_an_error_that_never_echoes_its_value(ssm: Any, prefix: str) -> None:
    name = f"{prefix}/tenants/acme/secrets/bad"
    put(ssm, name, '["Bearer leaked-value"]', "SecureString")
    server = ServerConfig(name="gh", url="https://gh.example/mcp", headers_secret=name)
    with pytest.raises(ConfigError) as err:
        SecretHeaders()(server)
    assert "leaked-value" not in err.value.message
    missing = ServerConfig(name="gh", url="https://gh.example/mcp", headers_secret=f"{prefix}/nope")
    with pytest.raises(ConfigError, match="cannot read its headers secret"):
        SecretHeaders()(missing)


def test_tenant_of_parameter() -> None:
    assert tenant_of_parameter("/foldgate/tenants/acme/servers/x", "/foldgate") == "acme"
    assert tenant_of_parameter("/foldgate/tenants/acme/config", "/foldgate/") == "acme"
    assert tenant_of_parameter("/foldgate/other/acme", "/foldgate") is None
    assert tenant_of_parameter("/foldgate/tenants/", "/foldgate") is None


@pytest.mark.parametrize("field", ["client_secret_secret", "private_key_secret"])
def test_an_auth_secret_resolves_under_the_tenants_own_secrets_only(
    ssm: Any, prefix: str, field: str
) -> None:
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {})
    auth: dict[str, Any] = {"kind": "client_credentials", "client_id": "m2m", "issuer": "https://as.example",
                            field: "m2m-key"}  # fmt: skip
    put(ssm, f"{base}/servers/gh", {"url": "https://gh.example/mcp", "auth": auth})
    server = SsmConfigSource(prefix).get("acme").server("gh")
    assert server is not None
    assert getattr(server.auth, field) == f"{base}/secrets/m2m-key"
    # The stack's own operator key must never be sent to a tenant's authorization server.
    put(ssm, f"{base}/servers/gh", {"url": "https://gh.example/mcp",
                                    "auth": {**auth, field: f"{prefix}/secrets/operator-key"}})  # fmt: skip
    with pytest.raises(ConfigError, match=f"'gh': auth.{field} must name a parameter under"):
        SsmConfigSource(prefix).get("acme")


def test_a_workload_assertion_secret_resolves_under_the_tenants_own_secrets_only(
    ssm: Any, prefix: str
) -> None:
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {})
    auth: dict[str, Any] = {"kind": "workload_jwt", "assertion": {"source": "secret", "name": "wif-jwt"}}
    put(ssm, f"{base}/servers/gh", {"url": "https://gh.example/mcp", "auth": auth})
    server = SsmConfigSource(prefix).get("acme").server("gh")
    assert server is not None
    assert server.auth.assertion.name == f"{base}/secrets/wif-jwt"  # type: ignore[union-attr]
    # The stack's token key must never be presented to a tenant's authorization server as an assertion.
    stolen = {
        "kind": "workload_jwt",
        "assertion": {"source": "secret", "name": f"{prefix}/secrets/token-hmac-key"},
    }
    put(ssm, f"{base}/servers/gh", {"url": "https://gh.example/mcp", "auth": stolen})
    with pytest.raises(ConfigError, match=r"'gh': auth\.assertion\.name must name a parameter under"):
        SsmConfigSource(prefix).get("acme")


@pytest.mark.parametrize("assertion", [{"source": "file", "path": "/proc/self/environ"},
                                       {"source": "command", "argv": ["/bin/sh", "-c", "env"]}])  # fmt: skip
def test_a_cloud_tenant_cannot_read_the_gateways_disk_or_run_its_programs(
    ssm: Any, prefix: str, assertion: dict[str, Any]
) -> None:
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {})
    put(ssm, f"{base}/servers/gh", {"url": "https://gh.example/mcp",
                                    "auth": {"kind": "workload_jwt", "assertion": assertion}})  # fmt: skip
    with pytest.raises(ConfigError, match=r"only allowed in a local config|only in local mode"):
        SsmConfigSource(prefix).get("acme")


@pytest.mark.parametrize(
    "path",
    ["idp.client_secret_secret", "idp.private_key_secret", "subject_token.secret", "client_secret_secret"],
)
def test_every_secret_of_an_exchange_kind_resolves_under_the_tenants_own_secrets_only(
    ssm: Any, prefix: str, path: str
) -> None:
    """id_jag names secrets in nested blocks too (the IdP's client, the subject token): each one is the
    tenant's own, so a tenant can never have foldgate hand the stack's secret to its IdP."""
    base = f"{prefix}/tenants/acme"
    put(ssm, f"{base}/config", {})
    head, _, field = path.rpartition(".")

    def auth(value: str) -> dict[str, Any]:
        idp = {"token_url": "https://idp.example/token", "client_id": "fg"}
        block: dict[str, Any] = {
            "kind": "id_jag",
            "idp": idp,
            "client_id": "up",
            "client_secret_secret": "up-secret",
        }
        if head == "idp":
            block["idp"] = {**block["idp"], field: value}
        elif head:
            block[head] = {field: value}
        else:
            block[field] = value
        return block

    put(ssm, f"{base}/servers/gh", {"url": "https://gh.example/mcp", "auth": auth("own-name")})
    server = SsmConfigSource(prefix).get("acme").server("gh")
    assert server is not None
    resolved = server.auth
    for part in path.split("."):
        resolved = getattr(resolved, part)
    assert resolved == f"{base}/secrets/own-name"
    put(
        ssm,
        f"{base}/servers/gh",
        {"url": "https://gh.example/mcp", "auth": auth(f"{prefix}/secrets/operator-key")},
    )
    with pytest.raises(ConfigError, match=f"'gh': auth.{path} must name a parameter under"):
        SsmConfigSource(prefix).get("acme")
