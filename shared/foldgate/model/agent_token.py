"""Agent-token format, keyed hashing and the grant model (the authority is in :mod:`foldgate.auth.authority`).

Tokens are opaque random bearer strings, stored only as keyed hashes, each bound to one tenant's scope.

A token is ``fgt_`` plus 32 random bytes in unpadded base64url (256 bits: nothing to guess, nothing to
brute-force offline even if the table leaks, since stores keep only an HMAC under a server-side key).
Its public id is the first 16 hex characters of that HMAC, so listing and revoking never need the
token itself, and the id reveals nothing about it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Final, get_args

from foldgate.errors import ConfigError, InvalidRequestError
from foldgate.model.catalog import Tier
from foldgate.model.naming import MAX_SERVER_NAME, SERVER_NAME_RE

__all__ = [
    "TIERS",
    "TOKEN_PREFIX",
    "AgentToken",
    "Tier",
    "TokenHasher",
    "check_scope",
    "is_token_id",
    "looks_like_token",
    "new_token",
    "parse_duration",
]

TOKEN_PREFIX: Final = "fgt_"
TIERS: Final[tuple[Tier, ...]] = get_args(Tier)
# Ordered so that a token of one tier may do everything the tiers below it allow.
_TIER_RANK: Final[dict[Tier, int]] = {tier: rank for rank, tier in enumerate(TIERS)}
_RANDOM_BYTES: Final = 32
# 32 bytes are 43 base64url characters without padding; anything else is not one of ours.
_TOKEN_RE: Final = re.compile(r"^fgt_[A-Za-z0-9_-]{43}$")
_TOKEN_ID_RE: Final = re.compile(r"^[0-9a-f]{16}$")
# Tenants end up in SSM parameter paths ({prefix}/tenants/{tenant}/...), so a token may only name a
# tenant spelled in that alphabet: a token for a tenant that could never be configured is a typo.
_TENANT_RE: Final = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_MAX_LABEL: Final = 200
_MIN_SECRET_BYTES: Final = 16
_UNITS: Final[dict[str, float]] = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION_RE: Final = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def new_token() -> str:
    """A fresh bearer token: ``fgt_`` + unpadded base64url of 32 bytes from the OS CSPRNG."""
    raw = secrets.token_bytes(_RANDOM_BYTES)
    return TOKEN_PREFIX + base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def looks_like_token(value: object) -> bool:
    """Whether ``value`` has the shape of a token (cheap check before any hashing or store read)."""
    return isinstance(value, str) and _TOKEN_RE.match(value) is not None


def is_token_id(value: object) -> bool:
    """Whether ``value`` has the shape of a public token id (16 lowercase hex characters)."""
    return isinstance(value, str) and _TOKEN_ID_RE.match(value) is not None


class TokenHasher:
    """Keyed hashes of tokens: HMAC-SHA256 under a server-side secret (never stored with the hashes).

    A plain hash would do against guessing (tokens carry 256 bits), but the key also means a leaked
    table cannot even confirm a token seen elsewhere.
    """

    def __init__(self, secret: bytes) -> None:
        if len(secret) < _MIN_SECRET_BYTES:
            raise ConfigError(f"the token HMAC secret must be at least {_MIN_SECRET_BYTES} bytes long")
        self._secret = secret

    def __repr__(self) -> str:
        return "TokenHasher(<secret>)"  # never the key, even in a traceback

    def digest(self, token: str) -> str:
        """The hex HMAC-SHA256 of the token: what stores keep instead of the token."""
        return hmac.new(self._secret, token.encode("utf-8"), hashlib.sha256).hexdigest()

    @staticmethod
    def token_id(digest: str) -> str:
        """The public id of a token: the first 16 hex characters of its digest (64 bits).

        Derived from the digest, so verifying a token costs one keyed lookup, with no index on digests.
        """
        return digest[:16]


@dataclass(frozen=True)
class AgentToken:
    """What a token grants, without the token or its digest (safe to list, log and cache).

    ``servers`` None means every server of the tenant, now and added later; ``expires_at`` None means
    the token never expires (it can still be revoked). ``last_used_at`` is when it last verified, as
    the store recorded it (at most once a minute: :class:`~foldgate.auth.authority.TokenAuthority`);
    None when never.
    """

    token_id: str
    tenant: str
    servers: tuple[str, ...] | None
    tier: Tier
    expires_at: float | None
    label: str | None = None
    created_at: float = field(default_factory=time.time)
    revoked: bool = False
    last_used_at: float | None = None

    def allows_tier(self, tier: Tier) -> bool:
        """Whether a tool of ``tier`` is within this token's tier (read < write < destructive)."""
        return _TIER_RANK[tier] <= _TIER_RANK[self.tier]

    def allows_server(self, name: str) -> bool:
        """Whether the tenant's server ``name`` is within this token's scope."""
        return self.servers is None or name in self.servers

    def is_expired(self, now: float | None = None) -> bool:
        """Whether the token is past its expiry at ``now`` (default: the current time)."""
        if self.expires_at is None:
            return False
        return (time.time() if now is None else now) >= self.expires_at

    @property
    def scope_key(self) -> str:
        """A stable string naming this token's scope, for per-scope caches and result-cache stamps.

        It is the token id: tenant, servers and tier are fixed when a token is issued, so the id
        identifies them for the token's whole life, and two agents never share cached results even if
        their scopes happen to be equal.
        """
        return self.token_id

    def to_public(self) -> dict[str, Any]:
        """A JSON-ready description (there is no digest to leave out: this object never holds one)."""
        return {
            "token_id": self.token_id,
            "tenant": self.tenant,
            "servers": None if self.servers is None else list(self.servers),
            "tier": self.tier,
            "expires_at": self.expires_at,
            "label": self.label,
            "created_at": self.created_at,
            "revoked": self.revoked,
            "last_used_at": self.last_used_at,
        }


def check_scope(
    tenant: str, servers: Any, tier: Any, label: str | None
) -> tuple[str, tuple[str, ...] | None, Tier, str | None]:
    """Validate what a new token would grant; returns it normalized (servers sorted, deduplicated).

    Raises InvalidRequestError naming the offending field.
    """
    if not isinstance(tenant, str) or not _TENANT_RE.match(tenant):
        raise InvalidRequestError(
            f"tenant {tenant!r} must be 1-128 characters of letters, digits, '.', '_' and '-'"
        )
    if tier not in TIERS:
        raise InvalidRequestError(f"tier {tier!r} must be one of {', '.join(TIERS)}")
    scope: tuple[str, ...] | None = None
    if servers is not None:
        if isinstance(servers, str) or not all(isinstance(s, str) for s in servers):
            raise InvalidRequestError("servers must be a list of server names, or None for every server")
        scope = tuple(sorted(set(servers)))
        if not scope:
            # An empty scope would be a token that can do nothing; almost certainly a mistake.
            raise InvalidRequestError("servers must name at least one server (or be None for every server)")
        for name in scope:
            if not SERVER_NAME_RE.match(name) or len(name) > MAX_SERVER_NAME:
                raise InvalidRequestError(f"server name {name!r} is not a valid server name")
    if label is not None:
        if not isinstance(label, str) or len(label) > _MAX_LABEL or not label.isprintable():
            raise InvalidRequestError(f"label must be at most {_MAX_LABEL} printable characters")
        label = label or None
    return tenant, scope, tier, label


def parse_duration(text: str) -> float:
    """Seconds from ``3600``, ``90s``, ``15m``, ``12h``, ``30d`` or ``2w``; raises InvalidRequestError."""
    match = _DURATION_RE.match(text)
    if match is None:
        raise InvalidRequestError(
            f"duration {text!r} must be a number of seconds or a number with s, m, h, d or w (e.g. 30d)"
        )
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if not math.isfinite(seconds) or seconds <= 0:
        raise InvalidRequestError(f"duration {text!r} must be positive")
    return seconds
