"""Validated claims -> foldgate's grant (a :class:`~foldgate.model.principal.Principal`), the same one
``fgt_`` tokens produce, so every surface, cache and rate limit treats both kinds of caller alike.

Defaults that work with any issuer and no mapping:

* tier from the scopes ``foldgate:read`` / ``foldgate:write`` / ``foldgate:destructive``, the highest
  present wins; none at all is :class:`~foldgate.errors.InsufficientScopeError` naming
  ``foldgate:read`` (RFC 6750 ``insufficient_scope``, which lets a client step up);
* servers from ``foldgate:server:<name>`` scopes; none means every server of the tenant.

The tenant's ``mapping.scope_prefix`` respells those scopes for issuers that prefix their own way
(Cognito: ``<resource server id>/read``, ``<resource server id>/server:<name>``). Its ``mapping`` rules
add to that: a rule whose claim matches grants its servers and/or tier
(e.g. ``groups`` contains ``support`` -> servers [tickets], tier write). Scopes come from ``scope``
(a space-separated string, RFC 9068) or ``scp`` (a list, as Entra ID and Okta send it).
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from foldgate.config.oauth import DEFAULT_SCOPE_PREFIX, ClaimRule, OAuthConfig
from foldgate.errors import InsufficientScopeError
from foldgate.model.catalog import Tier
from foldgate.model.principal import TIER_RANK, Principal

__all__ = [
    "SCOPE_TIERS",
    "SERVER_SCOPE_PREFIX",
    "claims_principal",
    "oauth_subject",
    "tier_scope",
    "token_scopes",
]

TIERS: Final[tuple[Tier, ...]] = ("read", "write", "destructive")
SCOPE_TIERS: Final[dict[str, Tier]] = {f"{DEFAULT_SCOPE_PREFIX}{t}": t for t in TIERS}
# The issuer and the subject are each cut here in a principal's label (the activity log names the caller).
_LABEL_PART: Final = 200
SERVER_SCOPE_PREFIX: Final = f"{DEFAULT_SCOPE_PREFIX}server:"
_MAX_SCOPES: Final = 500


def token_scopes(claims: dict[str, Any]) -> set[str]:
    """The token's scopes from ``scope`` (string) or ``scp`` (string or list); anything else is none."""
    raw = claims.get("scope", claims.get("scp"))
    if isinstance(raw, str):
        items: list[Any] = raw.split()
    elif isinstance(raw, list):
        items = raw
    else:
        return set()
    return {s for s in items[:_MAX_SCOPES] if isinstance(s, str)}


def tier_scope(config: OAuthConfig | None, tier: Tier = "read") -> str:
    """The scope that grants ``tier`` under ``config``'s spelling (what a challenge asks for)."""
    prefix = config.mapping.scope_prefix if config is not None else DEFAULT_SCOPE_PREFIX
    return prefix + tier


def _matches(rule: ClaimRule, claims: dict[str, Any]) -> bool:
    value = claims.get(rule.claim)
    if isinstance(value, str):
        return value == rule.value
    if isinstance(value, list):
        return rule.value in value
    return False


def _key(claims: dict[str, Any], tier: Tier, servers: frozenset[str] | None) -> str:
    """A stable, opaque scope key: who (issuer, subject, client) with what grant.

    The grant is part of it, so a caller who stepped up never reads results its narrower self left in
    a per-scope cache, and nothing of the subject is revealed in logs or stamps.
    """
    who = [str(claims.get(c, "")) for c in ("iss", "sub", "azp", "client_id")]
    what = [tier, ",".join(sorted(servers)) if servers is not None else "*"]
    digest = hashlib.sha256("\x1f".join(who + what).encode("utf-8")).hexdigest()
    return "oauth-" + digest[:16]


def claims_principal(claims: dict[str, Any], tenant: str, config: OAuthConfig) -> Principal:
    """The principal validated ``claims`` grant in ``tenant``; InsufficientScopeError without any tier."""
    prefix = config.mapping.scope_prefix
    server_prefix = prefix + "server:"
    scopes = token_scopes(claims)
    tiers: list[Tier] = [t for t in TIERS if prefix + t in scopes]
    servers = {s[len(server_prefix) :] for s in scopes if s.startswith(server_prefix)}
    servers.discard("")
    for rule in config.mapping.rules:
        if _matches(rule, claims):
            if rule.tier is not None:
                tiers.append(rule.tier)
            if rule.servers is not None:
                servers.update(rule.servers)
    if not tiers:
        raise InsufficientScopeError("this token grants no foldgate tier", scope=tier_scope(config))
    tier = max(tiers, key=TIER_RANK.__getitem__)
    scope = frozenset(servers) if servers else None
    issuer, sub = str(claims.get("iss", "")), str(claims.get("sub", ""))
    label = f"oauth:{issuer[:_LABEL_PART]}#{sub[:_LABEL_PART]}"
    return Principal(tenant, scope, tier, _key(claims, tier, scope), oauth_subject(issuer, sub), label)


def oauth_subject(issuer: str, sub: str) -> str:
    """The principal subject of a person signed in at ``issuer`` as ``sub`` (opaque, stable): what a
    per-user grant is keyed by, and what a connect-link sign-in must match."""
    who = f"{issuer}\x1f{sub}"
    return "oauth-sub-" + hashlib.sha256(who.encode("utf-8")).hexdigest()[:24]
