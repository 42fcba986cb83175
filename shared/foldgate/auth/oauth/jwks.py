"""An issuer's signing keys (JWKS), fetched once and kept for the life of a warm instance.

Keys are re-read when the cache is older than ``ttl`` (key rotation is rare and announced ahead), and
when a token names a ``kid`` the cache does not hold, which is how a rotation shows up first. That
refresh is bounded: at most one fetch per ``refresh_interval``, so a caller spraying tokens with random
``kid`` values costs the issuer one request per interval, not one per token. Only keys usable for an
allowed asymmetric signature algorithm are kept; symmetric (``oct``) keys are dropped, so no JWKS
entry can ever become an HMAC secret.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

from jwt import PyJWK
from jwt.exceptions import PyJWKError

from foldgate.errors import UpstreamError
from foldgate.upstream.oauth.fetch import FetchJson

__all__ = ["JwksCache"]

log = logging.getLogger(__name__)

_MAX_KEYS: Final = 50
# Which JWK a signature algorithm may use; anything else in the set is ignored.
_KTY: Final[dict[str, tuple[str, str | None]]] = {
    "RS256": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "EdDSA": ("OKP", "Ed25519"),
}


def _keys(doc: dict[str, Any], algorithms: Iterable[str]) -> dict[tuple[str | None, str], PyJWK]:
    """(kid, alg) -> key for every usable signing key of a JWKS document."""
    entries = doc.get("keys")
    if not isinstance(entries, list):
        raise UpstreamError("JWKS document has no keys list")
    keys: dict[tuple[str | None, str], PyJWK] = {}
    for entry in entries[:_MAX_KEYS]:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        kid = entry.get("kid")
        kid = kid if isinstance(kid, str) else None
        for alg in algorithms:
            kty, crv = _KTY[alg]
            if entry.get("kty") != kty or (crv is not None and entry.get("crv") != crv):
                continue
            if entry.get("alg") not in (None, alg):
                continue
            try:
                keys[(kid, alg)] = PyJWK(entry, algorithm=alg)
            except PyJWKError as exc:
                log.warning("ignoring unusable JWKS key %r: %s", kid, type(exc).__name__)
    return keys


class JwksCache:
    """The keys at one ``jwks_uri``; thread-safe, shared by every request of a warm instance."""

    def __init__(
        self,
        fetch: FetchJson,
        jwks_uri: Callable[[], Awaitable[str]],
        *,
        algorithms: Iterable[str],
        ttl: float = 3600.0,
        refresh_interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        """``jwks_uri`` is an async callable returning the URL (discovery may be needed to know it)."""
        self._fetch = fetch
        self._uri = jwks_uri
        self._algorithms = tuple(algorithms)
        self.ttl = ttl
        self.refresh_interval = refresh_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._keys: dict[tuple[str | None, str], PyJWK] = {}
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self.fetches = 0  # how many times the JWKS was read (the bench reports it)

    def _stale(self, now: float) -> bool:
        return self._fetched_at is None or now - self._fetched_at >= self.ttl

    def _may_refresh(self, now: float) -> bool:
        return self._attempted_at is None or not 0 <= now - self._attempted_at < self.refresh_interval

    async def _refresh(self) -> None:
        with self._lock:
            now = self._clock()
            if not self._may_refresh(now):
                return
            # Stamped before the fetch: concurrent requests do not pile up on the issuer.
            self._attempted_at = now
        self.fetches += 1
        doc = await self._fetch(await self._uri())
        if doc is None:
            raise UpstreamError("JWKS not found at the issuer's jwks_uri")
        keys = _keys(doc, self._algorithms)
        with self._lock:
            self._keys = keys
            self._fetched_at = self._clock()

    def _find(self, kid: str | None, alg: str) -> PyJWK | None:
        with self._lock:
            key = self._keys.get((kid, alg))
            if key is None and kid is None:
                # A token without kid is usable only when exactly one key fits its algorithm.
                fits = [k for (_, a), k in self._keys.items() if a == alg]
                key = fits[0] if len(fits) == 1 else None
            return key

    async def key(self, kid: str | None, alg: str) -> PyJWK | None:
        """The key for ``kid``/``alg``, refreshing at most once (bounded) if it is unknown; None if none.

        UpstreamError when the keys cannot be read and none are cached.
        """
        if self._stale(self._clock()):
            try:
                await self._refresh()
            except UpstreamError:
                if self._fetched_at is None:
                    raise
                log.warning("JWKS refresh failed; keeping the keys read before")
        key = self._find(kid, alg)
        if key is None and self._may_refresh(self._clock()):
            await self._refresh()
            key = self._find(kid, alg)
        return key
