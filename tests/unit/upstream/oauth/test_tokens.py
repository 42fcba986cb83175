"""Token answers: a hostile authorization server's lifetime never breaks the grant it becomes; an
RFC 8693 exchange's ``N_A`` answer is accepted there only."""

from __future__ import annotations

import time

import pytest
from mcp.shared.auth import OAuthToken

from foldgate.upstream.oauth.tokens import MAX_LIFETIME_S, grant_from


def test_an_absurd_lifetime_is_capped_not_an_overflow() -> None:
    # JSON carries integers of any size: 10**400 seconds once raised OverflowError on every sign-in.
    token = OAuthToken(access_token="at", expires_in=10**400)
    grant = grant_from(token, tenant="t", server="s", subject="u", issuer="https://as", resource=None)
    assert grant.expires_at is not None
    assert grant.expires_at <= time.time() + MAX_LIFETIME_S


async def test_n_a_is_an_exchange_answer_only_and_comes_back_as_bearer() -> None:
    """RFC 8693 section 2.2.1: ``token_type: N_A`` is the standard answer for a token exchange issuing
    another token type (accepted, presented as Bearer); from any other grant it is malformed."""
    from foldgate.errors import UpstreamError
    from foldgate.upstream.oauth.tokens import ClientAuth, request_token
    from tests.token_endpoint import token_endpoint

    def n_a(form: dict[str, str]) -> tuple[int, dict[str, object]]:
        jwt_type = "urn:ietf:params:oauth:token-type:jwt"
        return 200, {"access_token": "a.b.c", "issued_token_type": jwt_type, "token_type": "N_A"}

    with token_endpoint(n_a) as endpoint:
        client = ClientAuth("foldgate")
        token = await request_token(
            endpoint.url, {"grant_type": "x"}, client, issuer=endpoint.url, allow_private=True, exchange=True
        )
        assert (token.access_token, token.token_type) == ("a.b.c", "Bearer")
        with pytest.raises(UpstreamError, match="malformed"):
            await request_token(
                endpoint.url, {"grant_type": "x"}, client, issuer=endpoint.url, allow_private=True
            )
