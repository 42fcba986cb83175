"""Warm upstream sessions: one pinned HTTP client and one MCP session per upstream, reused across calls.

Opening a client and a session per call costs a TCP (+TLS) handshake and the MCP handshake
(``server/discover`` probe, ``initialize``, ``notifications/initialized``) before every tool call. The
pool keeps both open on the warm instance so a warm call is one HTTP round trip:

* **Identity.** A session belongs to a ``SessionKey``: server name, URL, the static headers resolved for
  it and, for OAuth upstreams, whose credentials it uses (auth kind, tenant, subject). A config change
  (new URL, rotated secret) is a new key and so a new session; the old one closes after
  ``idle_seconds`` unused (not at once: another tenant may use the same name). An access token is not
  part of the key: Streamable HTTP sends ``Authorization`` with every HTTP request, so a refreshed
  token is sent on the session already open (its next request, the listen stream's next reconnect)
  instead of costing a new session, a new listen stream and a re-list.
* **No SDK.** A session is a ``PlainSession`` (plain JSON-RPC, see ``plain_session``), so the first
  proxied call of a cold instance never imports the MCP SDK's client.
* **Era.** The first session to an upstream negotiates as the SDK's ``mode="auto"``. The pool remembers
  the outcome per key: a 2026-07-28 (stateless) upstream's discover result is adopted by every later
  session without any handshake; a handshake-era upstream goes straight to ``initialize``, skipping
  the probe it is known to refuse.
* **Expiry.** An upstream that forgets a session answers 404 (or, as server-everything does, a 400
  naming the session). The session sees that status and marks itself expired: the upstream refused the
  request before running it, so the caller may re-initialise and send it again.
* **Event loops.** Sessions, their background tasks and the concurrency limiters live on the loop
  that created them. Mangum keeps one loop per Lambda instance, so warm invocations share them; code
  that runs each request on a fresh loop (``asyncio.run`` per invocation, one loop per test) gets a
  fresh pool state instead of a session whose tasks are bound to a dead loop.
* **Concurrency.** ``max_concurrency`` calls in flight per upstream; a caller that waits longer than
  ``queue_timeout_s`` for a slot gets ``UpstreamBusyError``, so one slow upstream cannot hold every
  request of the instance.

* **Changes.** With an ``on_change`` listener (local mode only), each pooled session also holds an SDK
  client that hears the upstream's ``list_changed`` notifications: a handshake-era one through its
  message handler (on its GET stream), a 2026-07-28 one through a ``subscriptions/listen`` stream. It is
  the SDK's because those streams are long-lived and reconnecting, local mode's cold start does not
  matter, and the Lambda (no listener) never loads it. It lives and closes with the pooled session (an
  idle one closes after ``idle_seconds``; the next use opens and listens again). Only the first listen
  stream of a key tells the listener on its acknowledgement (see ``listen_for_changes``); a stream
  opened again for the same key re-lists only when the upstream says ``list_changed``.

SSRF: every session's HTTP client dials only the addresses the guard checked, for every new TCP
connection, pooled or not: a session's requests go through ``http1_transport`` (a lean HTTP/1.1
transport, most of what a warm call's upstream hop costs the gateway is gone with httpcore), the change
listener's through ``net_guard.guarded_http_client``'s pinning network backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamBusyError, UpstreamError
from foldgate.upstream.changes import ChangeListener, change_handler, listen_for_changes
from foldgate.upstream.http1_transport import session_http_client
from foldgate.upstream.net_guard import guarded_http_client
from foldgate.upstream.plain_session import CredentialsRefusedError, PlainSession
from foldgate.upstream.proof_bound import ProofBound

__all__ = [
    "IDLE_SECONDS",
    "AuthRefusedError",
    "PooledSession",
    "SessionKey",
    "SessionPool",
    "auth_refusal",
    "retry_safe",
]

log = logging.getLogger(__name__)

IDLE_SECONDS = 120.0
# Closing sends the upstream a DELETE for its session; a dead upstream must not stall shutdown.
_CLOSE_SECONDS = 5.0


class AuthRefusedError(UpstreamError):
    """The upstream answered 401/403 to a request carrying credentials: it ran nothing, so the request
    may be sent once more with better ones (``foldgate.upstream.oauth.provider`` decides)."""

    def __init__(self, name: str, status: int, challenge: str | None, sent: str | None) -> None:
        super().__init__(f"{name}: the upstream refused the credentials (HTTP {status})")
        self.status = status
        self.challenge = challenge
        self.sent = sent


def auth_refusal(name: str, exc: BaseException) -> AuthRefusedError | None:
    """``exc`` as the credentials refusal the client acts on, when that is what it is."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if not isinstance(exc, CredentialsRefusedError):
        return None
    return AuthRefusedError(name, exc.status, exc.challenge, exc.sent)


def _current_authorization(pooled: PooledSession) -> Any:
    """An httpx2 auth that sets the session's current Authorization on every request it sends (and,
    for a sender-constrained token, a proof made for that request: ``proof_bound``)."""
    # httpx2 loads with the first pooled session, not at init.
    import httpx2

    class _Current(httpx2.Auth):
        def auth_flow(self, request: httpx2.Request) -> Generator[httpx2.Request, httpx2.Response, None]:
            current = pooled.authorization
            if isinstance(current, ProofBound):
                yield from current.flow(request)
                return
            if current is not None:
                request.headers["authorization"] = current
            yield request

    return _Current()


def retry_safe(annotations: Mapping[str, Any] | None) -> bool:
    """Whether a tool may run twice: the upstream marks it read-only or idempotent.

    Annotations are the upstream's own claims about its own tool, so a false claim can only repeat an
    effect on that upstream; ``is True`` keeps anything but a real JSON true from counting.
    """
    ann = annotations or {}
    return ann.get("readOnlyHint") is True or ann.get("idempotentHint") is True


@dataclass(frozen=True, slots=True)
class SessionKey:
    """What a session is bound to: the server's name, URL, static request headers and credential
    identity (never an access token: see the module doc)."""

    name: str
    url: str
    headers: tuple[tuple[str, str], ...]
    identity: tuple[str, ...] = ()
    # The protocol this session must speak: "auto" (negotiated), "legacy" (any handshake-era version:
    # a call relaying input to a 2025-era client) or one pinned version (the server's setting).
    protocol: str = "auto"

    @classmethod
    def of(
        cls,
        server: ServerConfig,
        headers: Mapping[str, str],
        identity: tuple[str, ...] = (),
        protocol: str | None = None,
    ) -> SessionKey:
        """The key for a server with its static headers resolved now (a rotated secret gives a new
        key) and whose OAuth credentials its requests carry (``identity``), speaking ``protocol``
        (default: the server's setting)."""
        assert server.url is not None  # the config guarantees a url for HTTP servers
        chosen = protocol or server.protocol
        return cls(server.name, server.url, tuple(sorted(headers.items())), identity, chosen)


@dataclass(slots=True)
class _Era:
    """How an upstream negotiated last time: ``"legacy"`` or a modern version with its discover result
    (the raw dict the upstream sent)."""

    mode: str
    discover: Any = None


class PooledSession:
    """One ``PlainSession`` over one pinned HTTP client, opened (negotiated) once on its loop."""

    def __init__(
        self,
        key: SessionKey,
        *,
        allow_private: bool,
        era: _Era | None,
        timeout_s: float,
        on_change: ChangeListener | None = None,
        announce: bool = True,
    ) -> None:
        self.key = key
        self.on_change = on_change
        # Whether the listen stream's acknowledgement tells ``on_change`` (the key's first stream only).
        self.announce = announce
        # The Authorization value every request of this session carries now (its HTTP clients read it
        # per request, so a refreshed token needs no new session).
        self.authorization: str | None = None
        self.timeout_s = timeout_s
        self.allow_private = allow_private
        self.era = era
        self.broken = False
        self.in_flight = 0
        self.loop = asyncio.get_running_loop()
        self.last_used = self.loop.time()
        self.session: PlainSession | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        # Set once the listen stream (2026-07-28 sessions with a change listener) is acknowledged.
        self.listening = asyncio.Event()
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None
        self._listener: asyncio.Task[None] | None = None
        self._idle: asyncio.TimerHandle | None = None

    @property
    def expired(self) -> bool:
        """The upstream refused this session's id (see the module doc)."""
        return self.session is not None and self.session.expired

    async def _open(self) -> None:
        era = (self.era.mode, self.era.discover) if self.era is not None else None
        http = session_http_client(dict(self.key.headers), allow_private=self.allow_private)
        http.auth = _current_authorization(self)
        pinned = None if self.key.protocol == "auto" else self.key.protocol
        session = PlainSession(self.key.name, self.key.url, http, era=era, pinned=pinned)
        try:
            # An upstream that accepts the connection but never finishes the handshake must not leave
            # every later caller waiting on this session: it fails, and the next caller opens a new one.
            async with asyncio.timeout(self.timeout_s):
                await session.open()
            self.session = session
            if self.on_change is not None:
                self._listener = self.loop.create_task(
                    self._listen(), name=f"upstream-listen-{self.key.name}"
                )
        except BaseException as exc:  # the upstream refused or died: report it to waiters
            self._error, self.broken = exc, True
            await asyncio.shield(session.aclose(timeout_s=_CLOSE_SECONDS))
            if not isinstance(exc, Exception):
                raise
        finally:
            self._ready.set()

    async def _listen(self) -> None:
        """Hold the SDK client that hears ``list_changed`` (local mode; see the module doc)."""
        # Only a process with a change listener (local mode) loads the SDK's client, for this.
        import mcp_types as types
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        assert self.on_change is not None
        assert self.session is not None
        era = self.session.negotiated()
        mode, prior = ("legacy", None) if era is None or era[0] == "legacy" else era
        try:
            http = guarded_http_client(dict(self.key.headers), allow_private=self.allow_private)
            http.auth = _current_authorization(self)
            async with http:
                transport = streamable_http_client(self.key.url, http_client=http, terminate_on_close=True)
                options: dict[str, Any] = {
                    "mode": mode,
                    "prior_discover": types.DiscoverResult.model_validate(prior) if prior else None,
                    "message_handler": change_handler(self.key.name, self.on_change),
                }
                async with Client(
                    transport, cache=None, read_timeout_seconds=self.timeout_s, **options
                ) as client:
                    if client.session.discover_result is not None:
                        await listen_for_changes(
                            client,
                            self.key.name,
                            self.on_change,
                            self._stop,
                            announce=self.announce,
                            acknowledged=self.listening.set,
                        )
                    await self._stop.wait()
        except Exception as exc:  # no listening then: the schedule still reindexes
            log.info("%s: not listening for changes: %s", self.key.name, str(exc) or type(exc).__name__)

    async def ready(self) -> PlainSession:
        """The session once its era is settled (callers bound the wait with their deadline)."""
        if self._task is None:
            self._task = self.loop.create_task(self._open(), name=f"upstream-session-{self.key.name}")
        await self._ready.wait()
        if self.session is None or self.broken:
            if isinstance(self._error, Exception):
                raise self._error
            raise UpstreamError(f"{self.key.name}: no MCP session within {self.timeout_s:g}s")
        return self.session

    def negotiated(self) -> _Era | None:
        """The era this session settled on, for the next session to the same key."""
        era = self.session.negotiated() if self.session is not None else None
        return _Era(*era) if era is not None else None

    async def close(self) -> None:
        """End the session (DELETE to the upstream when it has one) and its HTTP client."""
        self.broken = True
        self._stop.set()
        if self._idle is not None:
            self._idle.cancel()
        if self._task is not None and not self._task.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, _CLOSE_SECONDS)
        if self._listener is not None and not self._listener.done():
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._listener, _CLOSE_SECONDS)
        if self.session is not None:
            await self.session.aclose(timeout_s=_CLOSE_SECONDS)


class _Limiter:
    """At most ``limit`` calls in flight to one upstream; waiting longer than the queue timeout fails."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._free = asyncio.Semaphore(limit)

    @contextlib.asynccontextmanager
    async def slot(self, server: ServerConfig) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(server.queue_timeout_s):
                await self._free.acquire()
        except TimeoutError:
            raise UpstreamBusyError(
                f"{server.name}: upstream busy: {self.limit} calls already in flight and no slot "
                f"freed within {server.queue_timeout_s:g}s; retry shortly"
            ) from None
        try:
            yield
        finally:
            self._free.release()


@dataclass
class _LoopState:
    loop: asyncio.AbstractEventLoop
    sessions: dict[SessionKey, PooledSession] = field(default_factory=dict)
    limiters: dict[tuple[str, str | None, int], _Limiter] = field(default_factory=dict)


class SessionPool:
    """Warm sessions and concurrency limits per upstream, for the event loop currently running."""

    def __init__(
        self,
        *,
        allow_private: bool,
        idle_seconds: float = IDLE_SECONDS,
        on_change: ChangeListener | None = None,
    ) -> None:
        self.allow_private = allow_private
        self.on_change = on_change
        self.idle_seconds = idle_seconds
        self._state: _LoopState | None = None
        self._eras: dict[SessionKey, _Era] = {}
        # Keys ("auto") whose upstream refused a handshake-era session: their calls stay at its newest.
        self._no_handshake: set[SessionKey] = set()
        # Keys a session was opened for once: a later listen stream for the same key does not re-list.
        self._listened: set[SessionKey] = set()
        self.opened = 0  # sessions started over the pool's life (observability and tests)

    def _current(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._state
        if state is None or state.loop is not loop:
            if state is not None and state.sessions:
                # Their tasks belong to another (usually closed) loop: never await them from this one.
                log.debug("event loop changed: dropping %d pooled upstream sessions", len(state.sessions))
            state = self._state = _LoopState(loop)
        return state

    def may_speak_handshake(self, key: SessionKey) -> bool:
        """Whether a handshake-era session to ``key``'s upstream is worth opening beside its auto one:
        not when the upstream refused one, nor when the auto session is handshake-era already."""
        era = self._eras.get(key)
        return key not in self._no_handshake and (era is None or era.mode != "legacy")

    def refuses_handshake(self, key: SessionKey) -> None:
        """Remember that ``key``'s upstream answers no handshake-era session (for the pool's life)."""
        self._no_handshake.add(key)

    def slot(self, server: ServerConfig) -> contextlib.AbstractAsyncContextManager[None]:
        """A concurrency slot for one call to ``server`` (raises UpstreamBusyError on queue timeout)."""
        state = self._current()
        ident = (server.name, server.url or " ".join(server.command or []), server.max_concurrency)
        limiter = state.limiters.get(ident)
        if limiter is None:
            limiter = state.limiters[ident] = _Limiter(server.max_concurrency)
        return limiter.slot(server)

    @contextlib.asynccontextmanager
    async def session(
        self, key: SessionKey, *, timeout_s: float, authorization: str | None = None
    ) -> AsyncIterator[PooledSession]:
        """A ready session for ``key``, opened (and its handshake done) on first use, then reused.

        ``timeout_s`` bounds a new session's handshake and each of its requests (the server's timeout).
        ``authorization``: the OAuth Authorization value current for ``key``'s identity; the session's
        requests carry it from now on.
        """
        state = self._current()
        pooled = state.sessions.get(key)
        if pooled is None or pooled.broken or pooled.expired:
            if pooled is not None:
                self._retire(state, pooled)
            pooled = state.sessions[key] = PooledSession(
                key,
                allow_private=self.allow_private,
                era=self._eras.get(key),
                timeout_s=timeout_s,
                # The upstream's auto session listens for changes; a handshake-era one beside it need not.
                on_change=self.on_change if key.protocol != "legacy" else None,
                announce=key not in self._listened,
            )
            self.opened += 1
        if authorization is not None:
            pooled.authorization = authorization
        pooled.in_flight += 1
        if pooled._idle is not None:
            pooled._idle.cancel()
            pooled._idle = None
        try:
            try:
                await pooled.ready()
            except BaseException as exc:
                # A remembered era that no longer works (the upstream changed) is renegotiated next time.
                self._eras.pop(key, None)
                refused = auth_refusal(key.name, exc)
                if refused is not None:
                    raise refused from exc
                raise
            era = pooled.negotiated()
            if era is not None:
                self._eras[key] = era
            if self.on_change is not None:
                self._listened.add(key)  # opened: its listen stream (if any) announced
            yield pooled
        finally:
            pooled.in_flight -= 1
            pooled.last_used = state.loop.time()
            if pooled.in_flight == 0 and not pooled.broken:
                pooled._idle = state.loop.call_later(self.idle_seconds, self._idle_check, state, pooled)

    def discard(self, pooled: PooledSession) -> None:
        """Stop reusing a session (broken transport or refused by the upstream); it closes when idle."""
        pooled.broken = True
        state = self._state
        if state is not None and state.loop is pooled.loop:
            self._retire(state, pooled)

    def _retire(self, state: _LoopState, pooled: PooledSession) -> None:
        if state.sessions.get(pooled.key) is pooled:
            del state.sessions[pooled.key]
        state.loop.create_task(pooled.close())

    def _idle_check(self, state: _LoopState, pooled: PooledSession) -> None:
        pooled._idle = None
        if pooled.in_flight == 0 and state.loop.time() - pooled.last_used >= self.idle_seconds * 0.99:
            self._retire(state, pooled)

    def live(self) -> int:
        """Sessions currently pooled on the running loop."""
        return len(self._current().sessions)

    async def aclose(self) -> None:
        """Close every session of the running loop's state (sessions of a dead loop died with it)."""
        state = self._state
        self._state = None
        if state is None:
            return
        if state.loop is not asyncio.get_running_loop():
            return
        await asyncio.gather(*(s.close() for s in state.sessions.values()), return_exceptions=True)
