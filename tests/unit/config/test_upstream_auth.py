"""The ``auth:`` block of a server: each kind parses, hostile or contradictory input is refused with
the field named, and ``static`` stays the default so existing configs mean what they meant."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.errors import ConfigError

URL = "https://mcp.example.com/mcp"


def server(auth: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": "up", "url": URL, **extra}
    if auth is not None:
        entry["auth"] = auth
    return {"servers": [entry]}


def parsed(doc: dict[str, Any], *, allow_loopback: bool = True) -> Any:
    return parse_tenant_config(doc, allow_loopback=allow_loopback).servers[0].auth


def test_static_is_the_default() -> None:
    assert parsed(server()).kind == "static"


def test_oauth_with_a_preregistered_client() -> None:
    auth = parsed(server({"kind": "oauth", "client_id": "fg", "client_secret_secret": "/fg/up-secret",
                          "registration": "preregistered", "scopes": ["repo:read"]}))  # fmt: skip
    assert (auth.kind, auth.client_id, auth.scopes) == ("oauth", "fg", ["repo:read"])


def test_per_user_is_its_own_kind() -> None:
    assert parsed(server({"kind": "per_user"})).kind == "per_user"


def test_client_credentials_with_a_private_key() -> None:
    auth = parsed(server({"kind": "client_credentials", "token_url": "https://as.example.com/token",
                          "client_id": "m2m", "private_key_secret": "/fg/key"}))  # fmt: skip
    assert auth.private_key_secret == "/fg/key"
    assert auth.client_secret_secret is None


def cc(**fields: str) -> dict[str, Any]:
    """A client_credentials block for client ``c`` with ``fields``."""
    return {"kind": "client_credentials", "client_id": "c", **fields}


AS = "https://as.example.com"


@pytest.mark.parametrize(
    ("auth", "why"),
    [
        ({"kind": "oauth", "registration": "preregistered"}, "needs a client_id"),
        ({"kind": "oauth", "client_secret_secret": "/x"}, "needs a client_id"),
        ({"kind": "oauth", "scopes": ['a"b']}, "visible ASCII"),
        ({"kind": "oauth", "token": "x"}, "Extra inputs"),
        ({"kind": "magic"}, "does not match any of the expected tags"),
        (cc(client_secret_secret="/s"), "exactly one of"),
        (cc(issuer=AS), "exactly one of"),
        (cc(issuer=AS, client_secret_secret="/s", private_key_secret="/k"), "exactly one of"),
        (cc(issuer="http://as.example.com", client_secret_secret="/s"), "https"),
        (cc(token_url="https://u:p@as.example.com/t", client_secret_secret="/s"), "credentials"),
        (cc(issuer=AS, client_secret_secret="../../etc/passwd x"), "pattern"),
    ],
)
def test_bad_auth_blocks_are_refused(auth: dict[str, Any], why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        parsed(server(auth))


def test_loopback_http_only_where_loopback_is_allowed() -> None:
    auth = {"kind": "client_credentials", "client_id": "c", "issuer": "http://127.0.0.1:9000",
            "client_secret_secret": "/s"}  # fmt: skip
    assert parsed(server(auth)).issuer == "http://127.0.0.1:9000"
    with pytest.raises(ConfigError, match="loopback"):
        parsed(server(auth), allow_loopback=False)


def test_oauth_refuses_a_second_authorization_header() -> None:
    with pytest.raises(ConfigError, match="sets Authorization itself"):
        parsed(server({"kind": "oauth"}, headers={"Authorization": "Bearer x"}))


def test_oauth_needs_an_http_upstream() -> None:
    doc = {"servers": [{"name": "up", "transport": "stdio", "command": ["x"], "auth": {"kind": "oauth"}}]}
    with pytest.raises(ConfigError, match="needs streamable_http"):
        parse_tenant_config(doc)


@pytest.mark.parametrize(
    "auth",
    [
        {"kind": "oauth"},
        {"kind": "per_user"},
        {"kind": "client_credentials", "token_url": URL, "client_id": "m", "client_secret_secret": "s"},
    ],
)
def test_dpop_is_an_option_of_every_oauth_kind_and_off_by_default(auth: dict[str, Any]) -> None:
    assert parsed(server(auth)).dpop is False
    assert parsed(server({**auth, "dpop": True})).dpop is True


def test_dpop_is_refused_on_static_auth() -> None:
    with pytest.raises(ConfigError, match="dpop"):
        parsed(server({"kind": "static", "dpop": True}))
