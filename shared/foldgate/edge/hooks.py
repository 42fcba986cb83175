"""Signed upstream webhooks: ``POST /api/v1/hooks/{tenant}/{server}`` asks for a reindex of one server.

Upstreams call it when their tools change, so it is not behind the operator credential; instead every
request carries an HMAC-SHA256 signature with that server's own secret (:mod:`foldgate.auth.hook_secrets`)::

    X-Foldgate-Timestamp: <unix seconds>
    X-Foldgate-Signature: sha256=<hex of HMAC(secret, timestamp + "." + body)>

A ping is accepted when the signature matches, the timestamp is within ``window_s`` of now, and the
same signature was not accepted before (replay protection: accepted signatures are remembered until
their timestamp leaves the window, at most ``max_seen`` of them, oldest dropped first). Any other ping
gets one identical 401 (same body, same headers) whether the signature was wrong, the timestamp stale,
the signature replayed or the tenant or server unknown: a caller learns nothing about which names exist.
Requests are rate-limited per (tenant, server) and in total before any secret is looked up. An accepted
ping schedules a coalesced server-scoped reindex and is answered 202 at once; the body is not
interpreted (it is signed only so a captured signature cannot be reused with another body).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Final

import anyio
from fastapi import APIRouter
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from foldgate.edge.admin_docs import HOOK_RESPONSES
from foldgate.edge.ratelimit import RateLimiter

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "HookVerifier", "cached_secrets", "hooks_router"]

log = logging.getLogger(__name__)

TIMESTAMP_HEADER: Final = "X-Foldgate-Timestamp"
SIGNATURE_HEADER: Final = "X-Foldgate-Signature"
_PREFIX: Final = "sha256="
# Compared against when a server has no secret, so an unknown name costs the same HMAC as a known one.
_NO_SECRET: Final = b"\x00" * 32
_MAX_BODY: Final = 64 * 1024

SecretLookup = Callable[[str, str], "bytes | None"]


def _refused() -> JSONResponse:
    # One answer for every refusal (see the module doc); built fresh so no state leaks between requests.
    return JSONResponse(
        {"error": {"code": "unauthorized", "message": "webhook signature not accepted"}},
        401,
        headers={"cache-control": "no-store"},
    )


class HookVerifier:
    """Checks signatures, the replay window and replays; thread-safe, bounded memory."""

    def __init__(
        self, *, window_s: float = 300.0, max_seen: int = 10_000, clock: Callable[[], float] = time.time
    ) -> None:
        self.window_s = window_s
        self.max_seen = max_seen
        self._clock = clock
        self._seen: OrderedDict[tuple[str, str, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def verify(
        self,
        tenant: str,
        server: str,
        secret: bytes | None,
        timestamp: str | None,
        signature: str | None,
        body: bytes,
    ) -> bool:
        """Whether the ping is authentic, fresh and new (and, if so, remember it as seen)."""
        stamp = timestamp or ""
        given = (signature or "").strip().lower()
        expected = hmac.new(
            secret or _NO_SECRET, stamp.encode("ascii", "replace") + b"." + body, hashlib.sha256
        )
        # As bytes: compare_digest raises TypeError on a str with non-ASCII characters (a header's
        # latin-1 decoding gives them at will); surrogatepass encodes any str.
        match = hmac.compare_digest(
            (_PREFIX + expected.hexdigest()).encode(), given.encode("utf-8", "surrogatepass")
        )
        if secret is None or not match or not stamp.isascii() or not stamp.isdigit() or len(stamp) > 12:
            return False
        now = self._clock()
        sent = int(stamp)
        if abs(now - sent) > self.window_s:
            return False
        key = (tenant, server, given)
        with self._lock:
            expires = self._seen.get(key)
            if expires is not None and expires > now:
                return False
            self._remember(key, sent + self.window_s, now)
        return True

    def _remember(self, key: tuple[str, str, str], expires: float, now: float) -> None:
        if len(self._seen) >= self.max_seen:
            for old in [k for k, e in self._seen.items() if e <= now]:
                del self._seen[old]
        while len(self._seen) >= self.max_seen:
            # Still full of live entries: drop the oldest (its replay would cost one more reindex).
            self._seen.popitem(last=False)
        self._seen[key] = expires

    def __len__(self) -> int:
        with self._lock:
            return len(self._seen)


def cached_secrets(lookup: SecretLookup, *, ttl_s: float = 60.0, max_keys: int = 1_000) -> SecretLookup:
    """``lookup`` with its answers (None included) kept ``ttl_s``: a Parameter Store read per ping
    would make pings cost a network round trip each, and unknown names would hit it unthrottled."""
    cache: OrderedDict[tuple[str, str], tuple[float, bytes | None]] = OrderedDict()
    lock = threading.Lock()

    def get(tenant: str, server: str) -> bytes | None:
        now, key = time.monotonic(), (tenant, server)
        with lock:
            hit = cache.get(key)
            if hit is not None and now - hit[0] < ttl_s:
                return hit[1]
        value = lookup(tenant, server)
        with lock:
            cache.pop(key, None)
            cache[key] = (now, value)
            while len(cache) > max_keys:
                cache.popitem(last=False)
        return value

    return get


async def _body(request: Request) -> bytes | None:
    """The body, or None past ``_MAX_BODY`` (read no further: a ping is small)."""
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > _MAX_BODY:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def hooks_router(
    secrets: SecretLookup,
    trigger: Callable[[str, str], Awaitable[None]],
    *,
    verifier: HookVerifier | None = None,
    per_server: RateLimiter | None = None,
    total: RateLimiter | None = None,
) -> APIRouter:
    """The webhook route; ``trigger(tenant, server)`` schedules the reindex and returns promptly."""
    # "is None", not "or": an empty limiter or verifier has len() 0 and so is falsy.
    verifier = HookVerifier() if verifier is None else verifier
    # A burst of 100 pings from one upstream passes; a flood across made-up names is capped in total.
    per_server = RateLimiter(120, burst=150) if per_server is None else per_server
    total = RateLimiter(1200, burst=600) if total is None else total
    router = APIRouter()

    @router.post(
        "/api/v1/hooks/{tenant}/{server}", status_code=202, include_in_schema=True, responses=HOOK_RESPONSES
    )
    async def hook(tenant: str, server: str, request: Request) -> Response:
        """Ask for a reindex of one upstream server (HMAC-signed; see the README)."""
        for limiter, key in ((per_server, f"{tenant}\x00{server}"), (total, "*")):
            allowed, retry = limiter.allow(key)
            if not allowed:
                return JSONResponse(
                    {"error": {"code": "rate_limited", "message": "too many webhook calls"}},
                    429,
                    headers={"retry-after": str(max(1, int(retry + 0.999)))},
                )
        body = await _body(request)
        if body is None:
            return JSONResponse({"error": {"code": "too_large", "message": "webhook body too large"}}, 413)
        # A Parameter Store read when not cached: off the event loop.
        secret = await anyio.to_thread.run_sync(secrets, tenant, server)
        headers = request.headers
        if not verifier.verify(
            tenant, server, secret, headers.get(TIMESTAMP_HEADER), headers.get(SIGNATURE_HEADER), body
        ):
            return _refused()
        await trigger(tenant, server)
        return JSONResponse({"accepted": True, "tenant": tenant, "server": server}, 202)

    return router
