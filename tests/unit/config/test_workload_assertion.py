"""The ``workload_jwt`` kind and its ``assertion:`` sources: each parses with its defaults, STS's bounds
are the service's (60-3600 s, RS256 or ES384, a region name), ``file`` and ``command`` (the gateway's
own disk and programs) are refused in a config from the cloud source, and contradictions are named."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.secret_refs import referenced_secrets
from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import ConfigError

URL = "https://mcp.example.com/mcp"


def doc(assertion: dict[str, Any], **auth: Any) -> dict[str, Any]:
    block = {"kind": "workload_jwt", "assertion": assertion, **auth}
    return {"servers": [{"name": "up", "url": URL, "auth": block}]}


def parsed(assertion: dict[str, Any], *, allow_loopback: bool = True, **auth: Any) -> Any:
    return parse_tenant_config(doc(assertion, **auth), allow_loopback=allow_loopback).servers[0].auth


def test_aws_sts_has_safe_defaults_and_needs_no_endpoint() -> None:
    auth = parsed({"source": "aws_sts", "audience": "https://as.example.com"})
    a = auth.assertion
    assert (auth.kind, a.signing_algorithm, a.duration_seconds, a.region) == (
        "workload_jwt",
        "RS256",
        300,
        None,
    )
    assert (auth.token_url, auth.issuer, auth.client_id) == (None, None, None)


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        ({"duration_seconds": 59}, "greater than or equal to 60"),
        ({"duration_seconds": 3601}, "less than or equal to 3600"),
        ({"signing_algorithm": "HS256"}, "'RS256' or 'ES384'"),
        ({"region": "global"}, "pattern"),
        ({"audience": ""}, "at least 1 character"),
    ],
)
def test_aws_sts_bounds_are_the_services(fields: dict[str, Any], why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        parsed({"source": "aws_sts", "audience": "https://as.example.com", **fields})


def test_aws_sts_takes_a_regional_endpoint_name() -> None:
    assert (
        parsed({"source": "aws_sts", "audience": "a", "region": "eu-central-1"}).assertion.region
        == "eu-central-1"
    )


@pytest.mark.parametrize(
    "assertion",
    [
        {"source": "file", "path": "/var/run/secrets/tokens/mcp"},
        {"source": "command", "argv": ["idp-agent", "jwt"]},
    ],
)
def test_file_and_command_are_for_local_configs_only(assertion: dict[str, Any]) -> None:
    assert parsed(assertion).assertion.source == assertion["source"]
    with pytest.raises(ConfigError, match="only allowed in a local config"):
        parsed(assertion, allow_loopback=False)


def test_command_bounds() -> None:
    a = parsed({"source": "command", "argv": ["x"]}).assertion
    assert (a.timeout_s, a.max_bytes) == (10.0, 16384)
    for bad in (
        {"argv": []},
        {"argv": ["x", ""]},
        {"argv": ["x"], "timeout_s": 0},
        {"argv": ["x"], "max_bytes": 10},
    ):
        with pytest.raises(ConfigError):
            parsed({"source": "command", **bad})


def test_a_secret_source_is_a_referenced_secret() -> None:
    config = parse_tenant_config(doc({"source": "secret", "name": "wif/jwt"}, client_id="c",
                                     client_secret_secret="wif/client"))  # fmt: skip
    assert referenced_secrets(config) == {
        "wif/client": "servers[0].auth.client_secret_secret",
        "wif/jwt": "servers[0].auth.assertion.name",
    }


@pytest.mark.parametrize(
    ("auth", "why"),
    [
        ({"token_url": "https://as/token", "issuer": "https://as"}, "not both"),
        ({"client_secret_secret": "s"}, "needs a client_id"),
        ({"token_url": "http://as.example.com/token"}, "https URL"),
        ({"resource": "https://x/?q=1"}, "query or fragment"),
        ({"scopes": ["a b"]}, "visible ASCII"),
        ({"assertion": {"source": "env", "name": "X"}}, "does not match any of the expected tags"),
    ],
)
def test_contradictions_and_hostile_values_are_named(auth: dict[str, Any], why: str) -> None:
    assertion = auth.pop("assertion", {"source": "secret", "name": "jwt"})
    with pytest.raises(ConfigError, match=why):
        parsed(assertion, **auth)
