"""The access tokens of the exchange kinds (``token_exchange``, ``id_jag``), per caller, in memory.

Whose token: with an inbound ``subject_token`` each person's own (the caller's subject, exchanged from
their inbound identity: one person never gets a token another's identity bought); with a configured
source, one per tenant (the shared subject). The indexer lists as the shared subject: with an inbound
subject it uses ``listing_subject_token`` when configured, else it cannot list
(:class:`UpstreamAuthorizationError`, a consent error, on which the indexer publishes the declared
``tools``, as for ``per_user``).

A token is kept per (tenant, server, subject, auth config) until its refresh margin before expiry (the
provider's :func:`refresh_margin` rule) and never stored: a cold instance exchanges again. One exchange
at a time per key in this process. A 401 from the upstream drops the token it refused (a 401 may also
mean the upstream moved to another authorization server: ``id_jag`` discovers again) and the client
sends once more with a fresh one; a second 401 is the client's error, never a loop. A refused exchange
is the tool error and is not retried. Every exchange's outcome is recorded (``ctx.outcomes``: the
status route and an ``upstream.grant`` audit event, never the person's token or the ID-JAG).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import IdJagAuth, TokenExchangeAuth, per_person
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import challenge_of
from foldgate.upstream.oauth.exchange import Exchanged, ExchangeDiscovery, on_behalf_of
from foldgate.upstream.oauth.id_jag import id_jag_token

__all__ = ["MAX_HELD", "ExchangedTokens"]

# Tokens held per process (one per person and server): the oldest go first beyond this.
MAX_HELD: Final = 10_000

ExchangeAuth = TokenExchangeAuth | IdJagAuth
Margin = Callable[[float, float | None], float]
"""``margin(received_at, expires_at)`` -> seconds before expiry a token is no longer used."""
_Key = tuple[str, str, str, str]


class ExchangedTokens:
    """Access tokens obtained by exchange, per (tenant, server, subject); see the module doc."""

    def __init__(self, ctx: OAuthContext, margin: Margin, *, max_held: int = MAX_HELD) -> None:
        self.ctx = ctx
        self.margin = margin
        self.max_held = max_held
        self._held: OrderedDict[_Key, tuple[str, float, float | None]] = OrderedDict()
        self._locks: dict[_Key, asyncio.Lock] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._found = ExchangeDiscovery()
        self.exchanges = 0  # exchanges made (observability and tests)

    @staticmethod
    def subject(auth: ExchangeAuth, caller: UpstreamCaller) -> str:
        """Whose token ``caller`` uses: their own with an inbound subject token, else the tenant's."""
        return caller.subject if per_person(auth) else SHARED_SUBJECT

    def _key(self, server: ServerConfig, auth: ExchangeAuth, caller: UpstreamCaller) -> _Key:
        # The config is part of the key: a changed client, IdP or audience is a new token.
        fingerprint = f"{server.url}\x1f{auth.model_dump_json()}"
        return (caller.tenant, server.name, self.subject(auth, caller), fingerprint)

    def _lock(self, key: _Key) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # a lock belongs to its loop: a new loop gets new ones
            self._loop, self._locks = loop, {}
        if len(self._locks) > self.max_held:
            self._locks = {k: v for k, v in self._locks.items() if v.locked()}
        return self._locks.setdefault(key, asyncio.Lock())

    def _usable(self, key: _Key) -> str | None:
        held = self._held.get(key)
        if held is None:
            return None
        token, received, expires = held
        if expires is not None and expires - self.margin(received, expires) <= time.time():
            del self._held[key]
            return None
        return token

    async def authorization(self, server: ServerConfig, auth: ExchangeAuth, caller: UpstreamCaller) -> str:
        """The ``Authorization`` value for ``caller`` at ``server`` (exchanging when none is held)."""
        key = self._key(server, auth, caller)
        async with self._lock(key):
            token = self._usable(key)
            if token is None:
                token, lifetime = await self._exchange(server, auth, caller)
                received = time.time()
                self._held[key] = (token, received, received + lifetime if lifetime else None)
                self._held.move_to_end(key)
                while len(self._held) > self.max_held:
                    self._held.popitem(last=False)
            return token  # "Bearer <token>", or a DPoP value that signs each request

    async def _exchange(self, server: ServerConfig, auth: ExchangeAuth, caller: UpstreamCaller) -> Exchanged:
        listing = self.subject(auth, caller) == SHARED_SUBJECT and auth.subject_token.inbound
        if listing and auth.listing_subject_token is None:
            raise UpstreamAuthorizationError(
                f"{server.name}: tools are listed without a person here (its subject is each caller's "
                "inbound identity): declare its tools or configure a listing_subject_token"
            )
        self.exchanges += 1
        outcomes = self.ctx.outcomes
        try:
            if isinstance(auth, IdJagAuth):
                found = await id_jag_token(self.ctx, server, auth, caller, self._found, listing=listing)
            else:
                found = await on_behalf_of(self.ctx, server, auth, caller, self._found, listing=listing)
        except UpstreamAuthorizationError as exc:
            code = exc.details.get("error")
            outcomes.record(
                caller.tenant, server.name, auth.kind, "refused", code if isinstance(code, str) else None
            )
            raise
        except UpstreamError:
            outcomes.record(caller.tenant, server.name, auth.kind, "failed", "exchange_failed")
            raise
        lifetime = found[1]
        expires = time.time() + lifetime if lifetime else None
        outcomes.record(caller.tenant, server.name, auth.kind, "obtained", expires_at=expires)
        return found

    async def refused(
        self,
        server: ServerConfig,
        auth: ExchangeAuth,
        caller: UpstreamCaller,
        sent: str | None,
        status: int,
        header: str | None,
    ) -> None:
        """The upstream refused ``sent``: a 401 drops it so the next attempt exchanges afresh (an
        ``id_jag`` server discovers again, the challenge may name a new authorization server); a 403
        is the tool's error."""
        challenge = challenge_of(header)
        if status == 403:
            named = f" (it needs scope {challenge.scope[:200]})" if challenge.scope else ""
            raise UpstreamError(f"{server.name}: the upstream refused this request (HTTP 403){named}")
        key = self._key(server, auth, caller)
        async with self._lock(key):
            held = self._held.get(key)
            if held is not None and (sent is None or sent == held[0]):
                del self._held[key]
        if isinstance(auth, IdJagAuth) and challenge.resource_metadata is not None:
            await self.ctx.discovered(server, challenge)  # re-read: the upstream may have moved
