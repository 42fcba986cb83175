"""Build the OAuth verifier a process needs from its settings (cloud: stack parameters; local: the
``serve --oauth-issuer`` flags), for the default tenant.

Per-tenant ``oauth:`` blocks in tenant configuration plug into the same :class:`OAuthVerifier` through
its ``configs`` callable; choosing the tenant by resource URL (path or host) is left to the edge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldgate.auth.oauth.config import parse_oauth_config
from foldgate.errors import ConfigError

if TYPE_CHECKING:
    from foldgate.auth.oauth.verifier import OAuthVerifier
    from foldgate.config.settings import Settings

__all__ = ["open_oauth"]


def open_oauth(settings: Settings) -> OAuthVerifier | None:
    """The verifier for ``settings.oauth_issuer`` (None when unset); ConfigError when unusable.

    A bad issuer is a start-up failure, never a silently open or silently closed gateway.
    """
    if not settings.oauth_issuer:
        return None
    if not settings.public_url:
        raise ConfigError(
            "OAuth needs the gateway's public base URL (FOLDGATE_PUBLIC_URL): it is the resource "
            "tokens are minted for"
        )
    doc = {"issuer": settings.oauth_issuer, "audience": settings.oauth_audience or None}
    allow = settings.allow_private_upstreams
    config = parse_oauth_config(doc, allow_loopback=allow, source="OAuth settings")
    # Only here: PyJWT and cryptography load where OAuth is on, not in every cold start.
    from foldgate.auth.oauth.verifier import OAuthVerifier

    tenant = settings.default_tenant
    return OAuthVerifier(
        lambda t: config if t == tenant else None, base_url=settings.public_url, allow_private=allow
    )
