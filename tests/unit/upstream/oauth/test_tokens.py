"""Token answers: a hostile authorization server's lifetime never breaks the grant it becomes."""

from __future__ import annotations

import time

from mcp.shared.auth import OAuthToken

from foldgate.upstream.oauth.tokens import MAX_LIFETIME_S, grant_from


def test_an_absurd_lifetime_is_capped_not_an_overflow() -> None:
    # JSON carries integers of any size: 10**400 seconds once raised OverflowError on every sign-in.
    token = OAuthToken(access_token="at", expires_in=10**400)
    grant = grant_from(token, tenant="t", server="s", subject="u", issuer="https://as", resource=None)
    assert grant.expires_at is not None
    assert grant.expires_at <= time.time() + MAX_LIFETIME_S
