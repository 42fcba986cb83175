"""The ``auth:`` block of a server: each kind parses, hostile or contradictory input is refused with
the field named, and ``static`` stays the default so existing configs mean what they meant."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.config.upstream_auth import auth_secrets, per_person, with_secrets
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


IDP = {"token_url": "https://idp.example.com/token", "client_id": "fg-at-idp"}
ID_JAG = {"kind": "id_jag", "idp": IDP, "client_id": "up-client", "client_secret_secret": "/fg/up"}


def test_id_jag_defaults_to_the_inbound_identity_and_keeps_secrets_by_reference() -> None:
    auth = parsed(server(ID_JAG))
    assert (auth.kind, auth.subject_token.inbound, auth.client_secret_secret) == ("id_jag", True, "/fg/up")
    assert auth.subject_token.type_urn("id_token") == "urn:ietf:params:oauth:token-type:id_token"
    with pytest.raises(ConfigError, match="client_secret"):
        parsed(server({**ID_JAG, "client_secret": "inline"}))  # never a secret in the config
    with pytest.raises(ConfigError, match="client_secret_secret"):
        parsed(server({k: v for k, v in ID_JAG.items() if k != "client_secret_secret"}))


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ({}, "exactly one"),
        ({"inbound": True, "secret": "/fg/t"}, "exactly one"),
        ({"secret": "not a name!"}, "subject_token.secret"),
        ({"command": [""]}, "non-empty"),
        ({"file": "/tmp/t", "token": "x"}, "token"),
    ],
)
def test_a_token_source_names_exactly_one_place(source: dict[str, Any], why: str) -> None:
    with pytest.raises(ConfigError, match=why):
        parsed(server({**ID_JAG, "subject_token": source}))


def test_files_and_commands_are_refused_in_a_cloud_config() -> None:
    for source in ({"file": "/etc/passwd"}, {"command": ["cat", "/etc/shadow"]}):
        assert parsed(server({**ID_JAG, "subject_token": source})).subject_token.inbound is False
        with pytest.raises(ConfigError, match="only allowed in local configs"):
            parsed(server({**ID_JAG, "subject_token": source}), allow_loopback=False)


def test_the_idp_needs_one_endpoint_and_at_most_one_credential() -> None:
    with pytest.raises(ConfigError, match="exactly one of token_url and issuer"):
        parsed(server({**ID_JAG, "idp": {"client_id": "x"}}))
    with pytest.raises(ConfigError, match="at most one"):
        parsed(server({**ID_JAG, "idp": {**IDP, "client_secret_secret": "/a", "private_key_secret": "/b"}}))
    with pytest.raises(ConfigError, match="needs a client_id"):
        parsed(server({**ID_JAG, "idp": {"token_url": IDP["token_url"], "client_secret_secret": "/a"}}))
    with pytest.raises(ConfigError, match="https"):
        parsed(server({**ID_JAG, "idp": {"token_url": "http://idp.example.com/token"}}))


def test_declared_tools_and_the_listing_token_go_with_an_inbound_subject_only() -> None:
    tools = [{"name": "read_file", "description": "Read."}]
    assert [t.name for t in parsed(server({**ID_JAG, "tools": tools})).tools] == ["read_file"]
    with pytest.raises(ConfigError, match="only for an inbound subject_token"):
        parsed(server({**ID_JAG, "subject_token": {"secret": "/fg/t"}, "tools": tools}))
    with pytest.raises(ConfigError, match="listing_subject_token cannot be inbound"):
        parsed(server({**ID_JAG, "listing_subject_token": {"inbound": True}}))


def test_token_exchange_parses_with_an_actor_that_is_never_the_caller() -> None:
    block = {"kind": "token_exchange", "issuer": "https://as.example.com", "client_id": "fg",
             "private_key_secret": "/fg/key", "actor_token": {"secret": "/fg/actor"},
             "requested_token_type": "jwt", "scopes": ["files:read"]}  # fmt: skip
    auth = parsed(server(block))
    assert (auth.kind, auth.subject_token.inbound, auth.requested_token_type) == (
        "token_exchange",
        True,
        "jwt",
    )
    with pytest.raises(ConfigError, match="actor_token cannot be inbound"):
        parsed(server({**block, "actor_token": {"inbound": True}}))
    with pytest.raises(ConfigError, match="requested_token_type"):
        parsed(server({**block, "requested_token_type": "cookie"}))
    assert (
        parsed(server({"kind": "token_exchange", "token_url": "https://as.example.com/t"})).client_id is None
    )


def test_only_the_inbound_exchange_kinds_and_per_user_are_per_person() -> None:
    assert per_person(parsed(server(ID_JAG)))
    assert per_person(parsed(server({"kind": "per_user"})))
    assert not per_person(parsed(server({**ID_JAG, "subject_token": {"secret": "/fg/t"}})))
    assert not per_person(parsed(server({"kind": "oauth"})))


def test_every_secret_an_auth_block_names_is_found_and_resolved_in_place() -> None:
    auth = parsed(server({**ID_JAG, "idp": {**IDP, "private_key_secret": "idp/key"},
                          "subject_token": {"secret": "id/token"},
                          "listing_subject_token": {"secret": "id/lister"}}))  # fmt: skip
    assert auth_secrets(auth) == {
        "client_secret_secret": "/fg/up",
        "idp.private_key_secret": "idp/key",
        "subject_token.secret": "id/token",
        "listing_subject_token.secret": "id/lister",
    }
    resolved = with_secrets(auth, lambda path, name: f"/t/{path}/{name}")
    assert resolved.idp.private_key_secret == "/t/idp.private_key_secret/idp/key"
    assert resolved.subject_token.secret == "/t/subject_token.secret/id/token"
    assert (resolved.client_id, resolved.idp.client_id) == (auth.client_id, auth.idp.client_id)
    assert with_secrets(parsed(server({"kind": "oauth"})), lambda path, name: "x").kind == "oauth"


@pytest.mark.parametrize(
    "auth",
    [
        {"kind": "oauth"},
        {"kind": "per_user"},
        {"kind": "client_credentials", "token_url": URL, "client_id": "m", "client_secret_secret": "s"},
        {"kind": "workload_jwt", "assertion": {"source": "secret", "name": "jwt"}},
    ],
)
def test_dpop_is_an_option_of_every_oauth_kind_and_off_by_default(auth: dict[str, Any]) -> None:
    assert parsed(server(auth)).dpop is False
    assert parsed(server({**auth, "dpop": True})).dpop is True


def test_dpop_is_refused_on_static_auth() -> None:
    with pytest.raises(ConfigError, match="dpop"):
        parsed(server({"kind": "static", "dpop": True}))
