"""Build the OAuth verifier a process needs from its settings and its live tenant configs.

A tenant's OAuth config is its ``oauth:`` block (tenant configuration, re-read as it changes); the
default tenant falls back to the process-level issuer (cloud: stack parameters; local: the
``serve --oauth-issuer`` flags). Tenant configs are re-checked here against this process's network
policy: an ``http://`` loopback issuer is only trusted where private upstreams are allowed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from foldgate.config.oauth import OAuthConfig, parse_oauth_config
from foldgate.errors import ConfigError, NotFoundError

if TYPE_CHECKING:
    from foldgate.auth.oauth.verifier import OAuthVerifier
    from foldgate.config.settings import Settings
    from foldgate.config.source import ConfigSource

__all__ = ["open_oauth", "tenant_oauth_configs"]

log = logging.getLogger(__name__)

# Tenants remembered as absent; bounded because a token's (unverified) tenant claim is caller-chosen.
_MAX_MISSES = 1024


def tenant_oauth_configs(
    settings: Settings, source: ConfigSource | None
) -> Callable[[str], OAuthConfig | None]:
    """``tenant -> OAuthConfig | None`` from the live tenant configs, with the settings' issuer as
    the default tenant's fallback; ConfigError at start-up when the settings' issuer is unusable."""
    allow = settings.allow_private_upstreams
    fallback: OAuthConfig | None = None
    if settings.oauth_issuer:
        # The environment gives one string: several audiences (Cognito's client ids) are comma-separated.
        audience = [a.strip() for a in (settings.oauth_audience or "").split(",") if a.strip()]
        mapping: dict[str, str] = {"audience_claim": settings.oauth_audience_claim}
        if settings.oauth_scope_prefix:
            mapping["scope_prefix"] = settings.oauth_scope_prefix
        doc: dict[str, Any] = {"issuer": settings.oauth_issuer, "audience": audience or None,
                               "mapping": mapping}  # fmt: skip
        if settings.oauth_login_client_id:
            doc["login"] = {"client_id": settings.oauth_login_client_id}
        fallback = parse_oauth_config(doc, allow_loopback=allow, source="OAuth settings")
    checked: dict[str, OAuthConfig | None] = {}
    # Unknown tenants for a while: a source caches what it finds, not what it does not (a Parameter
    # Store read per request for a deployment without a "default" tenant, or per made-up claim).
    misses: dict[str, float] = {}

    def configs(tenant: str) -> OAuthConfig | None:
        block = None
        now = time.monotonic()
        if source is not None and misses.get(tenant, 0.0) <= now:
            try:
                block = source.get(tenant).oauth
            except (NotFoundError, ConfigError):
                # An unknown or unreadable tenant accepts no OAuth token (fail closed).
                if len(misses) >= _MAX_MISSES:
                    misses.clear()
                misses[tenant] = now + settings.config_cache_seconds
        if block is None:
            return fallback if tenant == settings.default_tenant else None
        key = block.model_dump_json()
        if key not in checked:
            try:
                checked[key] = parse_oauth_config(
                    block.model_dump(), allow_loopback=allow, source=f"oauth of tenant {tenant}"
                )
            except ConfigError as exc:
                log.error("tenant %s accepts no OAuth token: %s", tenant, exc.message)
                checked[key] = None
        return checked[key]

    return configs


def open_oauth(settings: Settings, source: ConfigSource | None = None) -> OAuthVerifier | None:
    """The verifier for the settings' issuer and the tenants' ``oauth:`` blocks; None when OAuth
    cannot apply (no public base URL and no issuer). ConfigError when the settings are unusable.

    A bad issuer is a start-up failure, never a silently open or silently closed gateway.
    """
    if not settings.public_url:
        if settings.oauth_issuer:
            raise ConfigError(
                "OAuth needs the gateway's public base URL (FOLDGATE_PUBLIC_URL): it is the resource "
                "tokens are minted for"
            )
        return None
    configs = tenant_oauth_configs(settings, source)
    # Only here: PyJWT and cryptography load where OAuth can apply, not in every cold start.
    from foldgate.auth.oauth.verifier import OAuthVerifier

    return OAuthVerifier(
        configs,
        base_url=settings.public_url,
        allow_private=settings.allow_private_upstreams,
        default_tenant=settings.default_tenant,
        tenant_claim=settings.tenant_claim,
    )
