"""The RFC 8693 form (optional fields only when set, the actor with its type) and the refusal mapping:
an error code is ``upstream_needs_authorization`` naming it, no code a plain upstream failure."""

from __future__ import annotations

import jwt
from mcp.shared.auth import JWT_BEARER_GRANT_TYPE

from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.upstream.oauth.exchange import TOKEN_EXCHANGE_GRANT, exchange_form, refusal
from foldgate.upstream.oauth.id_jag import JWT_BEARER_GRANT, claims_of
from foldgate.upstream.oauth.tokens import TokenRefusedError


def test_the_form_carries_only_what_is_set() -> None:
    assert exchange_form("subj", "urn:t") == {
        "grant_type": TOKEN_EXCHANGE_GRANT, "subject_token": "subj", "subject_token_type": "urn:t",
    }  # fmt: skip
    full = exchange_form("subj", "urn:t", requested_token_type="urn:r", audience="a", resource="https://r/",
                         scope="s1 s2", actor=("act", "urn:a"))  # fmt: skip
    assert full == {
        "grant_type": TOKEN_EXCHANGE_GRANT, "subject_token": "subj", "subject_token_type": "urn:t",
        "requested_token_type": "urn:r", "audience": "a", "resource": "https://r/", "scope": "s1 s2",
        "actor_token": "act", "actor_token_type": "urn:a",
    }  # fmt: skip


def test_a_refusal_with_a_code_needs_authorization_and_one_without_is_a_failure() -> None:
    named = refusal(
        "files", "the enterprise IdP", "the ID-JAG exchange", TokenRefusedError("x", error="access_denied")
    )
    assert isinstance(named, UpstreamAuthorizationError)
    assert named.code == "upstream_needs_authorization"
    assert named.message.startswith("files: the enterprise IdP refused the ID-JAG exchange (access_denied)")
    plain = refusal("files", "the IdP", "the exchange", TokenRefusedError("HTTP 502", error=None))
    assert type(plain) is UpstreamError


def test_claims_are_read_unverified_and_garbage_is_no_claims() -> None:
    token = jwt.encode({"client_id": "c", "exp": 1}, "k" * 32, algorithm="HS256")
    assert claims_of(token) == {"client_id": "c", "exp": 1}
    assert claims_of("not.a.jwt") == {}
    assert claims_of("opaque") == {}


def test_the_jwt_bearer_grant_is_the_sdks() -> None:
    assert JWT_BEARER_GRANT == JWT_BEARER_GRANT_TYPE
