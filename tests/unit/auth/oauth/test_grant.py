"""Claims -> Principal: tier from foldgate scopes (highest wins, none refused with the scope to ask
for), servers from server scopes (none = all), claim rules adding servers/tiers, and scope keys that
separate callers and grants."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from foldgate.auth.oauth.grant import claims_principal, token_scopes
from foldgate.config.oauth import OAuthConfig
from foldgate.errors import InsufficientScopeError

PLAIN = OAuthConfig(issuer="https://login.example.com")


def _principal(config: OAuthConfig = PLAIN, **claims: Any) -> Any:
    return claims_principal({"iss": PLAIN.issuer, "sub": "u1", **claims}, "acme", config)


@pytest.mark.parametrize(
    ("scope", "tier"),
    [
        ("foldgate:read", "read"),
        ("foldgate:write", "write"),
        ("foldgate:destructive", "destructive"),
        ("foldgate:read foldgate:destructive foldgate:write", "destructive"),
        ("openid foldgate:write profile", "write"),
    ],
)
def test_the_highest_tier_scope_wins(scope: str, tier: str) -> None:
    principal = _principal(scope=scope)
    assert principal.tier == tier
    assert principal.tenant == "acme"


def test_no_tier_scope_is_insufficient_scope_naming_read() -> None:
    with pytest.raises(InsufficientScopeError) as info:
        _principal(scope="openid foldgate:server:crm foldgate:admin")
    assert info.value.scope == "foldgate:read"
    assert info.value.code == "insufficient_scope"


def test_server_scopes_limit_servers_and_none_means_all() -> None:
    assert _principal(scope="foldgate:read").servers is None
    scoped = _principal(scope="foldgate:read foldgate:server:crm foldgate:server:tickets foldgate:server:")
    assert scoped.servers == frozenset({"crm", "tickets"})


def test_scp_lists_are_read_like_scope_strings() -> None:
    principal = _principal(scp=["foldgate:write", "foldgate:server:git"])
    assert (principal.tier, principal.servers) == ("write", frozenset({"git"}))
    assert token_scopes({"scope": 42}) == set()
    assert token_scopes({"scp": ["a", 1, None, "b"]}) == {"a", "b"}


def test_claim_rules_add_tiers_and_servers() -> None:
    config = OAuthConfig.model_validate(
        {
            "issuer": "https://login.example.com",
            "mapping": [
                {"claim": "groups", "value": "support", "servers": ["tickets"], "tier": "write"},
                {"claim": "department", "value": "ops", "tier": "destructive"},
            ],
        }
    )
    support = _principal(config, groups=["staff", "support"])
    assert (support.tier, support.servers) == ("write", frozenset({"tickets"}))
    ops = _principal(config, scope="foldgate:read foldgate:server:crm", department="ops")
    assert (ops.tier, ops.servers) == ("destructive", frozenset({"crm"}))
    # A rule that does not match grants nothing: no tier at all is still refused.
    with pytest.raises(InsufficientScopeError):
        _principal(config, groups="support-team")


def test_scope_keys_separate_callers_and_grants_and_hide_the_subject() -> None:
    a = _principal(scope="foldgate:read")
    assert a.key == _principal(scope="foldgate:read").key
    assert a.key != _principal(scope="foldgate:write").key
    assert a.key != _principal(scope="foldgate:read foldgate:server:crm").key
    assert (
        a.key
        != claims_principal({"iss": PLAIN.issuer, "sub": "u2", "scope": "foldgate:read"}, "acme", PLAIN).key
    )
    assert "u1" not in a.key
    assert a.key.startswith("oauth-")


def test_the_activity_log_names_a_person_by_issuer_and_subject_never_the_token() -> None:
    principal = _principal(scope="foldgate:read")
    assert principal.who == f"oauth:{PLAIN.issuer}#u1"
    # Not part of the scope: two principals that differ only in it are one cache key.
    assert principal == dataclasses.replace(principal, label="other")
    long = claims_principal({"iss": PLAIN.issuer, "sub": "s" * 5000, "scope": "foldgate:read"}, "acme", PLAIN)
    assert len(long.who) < 500
