"""Agent tokens: issue, verify, list and revoke; the one place that turns a bearer string into a grant.

A successful verification records the token's last use at most once a minute per token and instance
(:data:`TOUCH_SECONDS`), for the console's *last used* column: one small store write a minute per
active token, made by a writer thread beside requests (:mod:`foldgate.auth.last_use`), never in front
of one; a failed write is logged and the request never notices.

Every verification failure (malformed, unknown, wrong digest, expired, revoked) raises the same
:class:`~foldgate.errors.AuthError` with the same message, so a caller learns nothing about which
tokens exist. Tokens and digests are never logged; token ids of known tokens are (they are public).

The token format, the hasher and the grant model live in :mod:`foldgate.model.agent_token` (the stores need
them without the authority); :func:`foldgate.app.wiring.open_authority` builds one from Settings.
"""

from __future__ import annotations

import hmac
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable
from typing import Final

from foldgate.auth.last_use import UseWriter
from foldgate.errors import AuthError, ConflictError, InvalidRequestError
from foldgate.model.agent_token import (
    AgentToken,
    Tier,
    TokenHasher,
    check_scope,
    is_token_id,
    looks_like_token,
    new_token,
)
from foldgate.store.tokens.base import TokenStore

__all__ = ["INVALID_TOKEN", "TOUCH_SECONDS", "TokenAuthority"]

log = logging.getLogger(__name__)

INVALID_TOKEN: Final = "invalid, expired or revoked token"
# A fresh id collides with a stored one with probability ~n/2^64; retrying is for correctness only.
_ISSUE_ATTEMPTS: Final = 3
# A token's last use is written at most this often per instance: "last used" is read by a person.
TOUCH_SECONDS: Final = 60.0


class TokenAuthority:
    """Tokens over a store and a hasher; safe to share between threads.

    Successful verifications are cached in this instance for ``cache_seconds`` (0 disables the cache),
    so a revocation made elsewhere (another Lambda instance, the CLI) takes effect here within
    ``cache_seconds``; a revocation through this instance's :meth:`revoke` takes effect at once.
    Expiry is checked on every call, cached or not. ``clock`` returns epoch seconds (tests pass a fake).
    """

    def __init__(
        self,
        store: TokenStore,
        hasher: TokenHasher,
        *,
        cache_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
        max_cached: int = 10_000,
    ) -> None:
        self.store = store
        self.hasher = hasher
        self.cache_seconds = max(0.0, cache_seconds)
        self.clock = clock
        self.max_cached = max(1, max_cached)
        self._lock = threading.Lock()
        # digest -> (grant, when it was read from the store). Keyed by digest so no token is kept.
        self._cache: dict[str, tuple[AgentToken, float]] = {}
        # token id -> when this instance last recorded its use (bounded like the cache).
        self._touched: dict[str, float] = {}
        self.uses = UseWriter(store, max_pending=self.max_cached)

    def issue(
        self,
        tenant: str,
        *,
        servers: Iterable[str] | None = None,
        tier: Tier = "read",
        expires_in: float | None,
        label: str | None = None,
    ) -> tuple[str, AgentToken]:
        """Create and store a token; returns the bearer string (shown once, never stored) and its grant.

        ``servers`` None grants every server of the tenant; ``expires_in`` (seconds, > 0) None means
        no expiry. Raises InvalidRequestError naming a bad argument.
        """
        # Materialized once (an iterator would be spent by validation); a bare string stays as it is
        # so that check_scope rejects it instead of reading it as a list of letters.
        names = servers if servers is None or isinstance(servers, str) else list(servers)
        tenant, scope, tier, label = check_scope(tenant, names, tier, label)
        if expires_in is not None and (
            isinstance(expires_in, bool)
            or not isinstance(expires_in, int | float)
            or not math.isfinite(expires_in)
            or expires_in <= 0
        ):
            raise InvalidRequestError(f"expires_in must be a positive number of seconds, got {expires_in!r}")
        for attempt in range(_ISSUE_ATTEMPTS):
            token = new_token()
            digest = self.hasher.digest(token)
            now = self.clock()
            grant = AgentToken(
                token_id=self.hasher.token_id(digest),
                tenant=tenant,
                servers=scope,
                tier=tier,
                expires_at=None if expires_in is None else now + float(expires_in),
                label=label,
                created_at=now,
            )
            try:
                self.store.put(grant, digest)
            except ConflictError:
                if attempt + 1 == _ISSUE_ATTEMPTS:
                    raise
                continue
            log.info("issued token %s for tenant %s (tier %s)", grant.token_id, tenant, tier)
            return token, grant
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns or raises

    def verify(self, token: str) -> AgentToken:
        """The grant of a valid token; AuthError (always the same message) for anything else.

        Store failures propagate as StoreError: an outage is not the caller's bad credential.
        """
        if not looks_like_token(token):
            raise AuthError(INVALID_TOKEN)
        digest = self.hasher.digest(token)
        now = self.clock()
        grant = self._cached(digest, now)
        if grant is None:
            found = self.store.get(self.hasher.token_id(digest))
            # compare_digest: the time taken must not tell how much of a forged digest matched.
            if found is None or not hmac.compare_digest(found[1], digest):
                raise AuthError(INVALID_TOKEN)
            grant = found[0]
            if grant.revoked:
                log.info("rejected revoked token %s", grant.token_id)
                raise AuthError(INVALID_TOKEN)
            if not grant.is_expired(now):
                self._remember(digest, grant, now)
        if grant.is_expired(now):
            with self._lock:
                self._cache.pop(digest, None)
            log.info("rejected expired token %s", grant.token_id)
            raise AuthError(INVALID_TOKEN)
        self._touch(grant.token_id, now)
        return grant

    def _touch(self, token_id: str, now: float) -> None:
        """Queue the use for the store unless this instance did within :data:`TOUCH_SECONDS`."""
        with self._lock:
            last = self._touched.get(token_id)
            # A clock that went backwards counts as due: the bound on staleness must hold either way.
            if last is not None and 0 <= now - last < TOUCH_SECONDS:
                return
            if len(self._touched) >= self.max_cached:
                self._touched.clear()
            self._touched[token_id] = now
        self.uses.submit(token_id, now)

    def list(self, tenant: str | None = None) -> list[AgentToken]:
        """Stored tokens (of one tenant), oldest first; expired and revoked ones included."""
        return self.store.list(tenant)

    def revoke(self, token_id: str) -> bool:
        """Revoke by public id; True if the token exists. Other instances see it within their cache bound."""
        if not is_token_id(token_id):
            return False
        found = self.store.revoke(token_id)
        with self._lock:
            for digest in [d for d, (g, _) in self._cache.items() if g.token_id == token_id]:
                del self._cache[digest]
        if found:
            log.info("revoked token %s", token_id)
        return found

    def _cached(self, digest: str, now: float) -> AgentToken | None:
        if self.cache_seconds <= 0:
            return None
        with self._lock:
            entry = self._cache.get(digest)
            if entry is None:
                return None
            grant, at = entry
            # A clock that went backwards counts as stale too: the bound must hold either way.
            if not 0 <= now - at < self.cache_seconds:
                del self._cache[digest]
                return None
            return grant

    def _remember(self, digest: str, grant: AgentToken, now: float) -> None:
        if self.cache_seconds <= 0:
            return
        with self._lock:
            if len(self._cache) >= self.max_cached:
                # Bounded memory under many distinct tokens: drop stale entries, then everything.
                for stale in [
                    d for d, (_, at) in self._cache.items() if not 0 <= now - at < self.cache_seconds
                ]:
                    del self._cache[stale]
                if len(self._cache) >= self.max_cached:
                    self._cache.clear()
            self._cache[digest] = (grant, now)
