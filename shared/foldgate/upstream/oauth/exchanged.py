"""The access tokens of the exchange kinds (``token_exchange``, ``id_jag``), per caller, in memory.

Whose token: with an inbound ``subject_token`` each person's own (the caller's subject, exchanged from
their inbound identity: one person never gets a token another's identity bought); with a configured
source, one per tenant (the shared subject). The indexer lists as the shared subject: with an inbound
subject it uses ``listing_subject_token`` when configured, else it cannot list
(:class:`UpstreamAuthorizationError`, a consent error, on which the indexer publishes the declared
``tools``, as for ``per_user``).

A token is kept per (tenant, server, subject, auth config) until its refresh margin before expiry (the
provider's :func:`refresh_margin` rule), at most ``MAX_HOLD_S`` (``UNKNOWN_HOLD_S`` when the server
gave no lifetime, not at all when it gave none left), and never stored: a cold instance exchanges
again. One exchange at a time per key in this process. A 401 from the upstream drops the token it
refused (a 401 may also mean the upstream moved to another authorization server: ``id_jag`` discovers
again) and the client sends once more with a fresh one; a second 401 is the client's error, never a
loop. A refused exchange is the tool error and is not retried. Every exchange's outcome is recorded
(``ctx.outcomes``: the status route and an ``upstream.grant`` audit event, never the person's token
or the ID-JAG).
"""

from __future__ import annotations

import asyncio
import time
from typing import Final

from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import IdJagAuth, TokenExchangeAuth, per_person
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import challenge_of
from foldgate.upstream.oauth.exchange import Exchanged, ExchangeDiscovery, on_behalf_of
from foldgate.upstream.oauth.held import HeldTokens, Margin
from foldgate.upstream.oauth.id_jag import id_jag_token

__all__ = ["MAX_HELD", "MAX_HOLD_S", "UNKNOWN_HOLD_S", "ExchangedTokens"]

# Tokens held per process (one per person and server): the oldest go first beyond this.
MAX_HELD: Final = 10_000
# How long a token is held at most, and when the server gave no lifetime: a revocation at the IdP or
# the authorization server takes effect at the next exchange, never only when the process ends.
MAX_HOLD_S: Final = 3600
UNKNOWN_HOLD_S: Final = 300

ExchangeAuth = TokenExchangeAuth | IdJagAuth
_Key = tuple[str, str, str, str]


class ExchangedTokens:
    """Access tokens obtained by exchange, per (tenant, server, subject); see the module doc."""

    def __init__(self, ctx: OAuthContext, margin: Margin, *, max_held: int = MAX_HELD) -> None:
        self.ctx = ctx
        self.margin = margin
        self.max_held = max_held
        self._held: HeldTokens[_Key] = HeldTokens(margin, max_held=max_held)
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

    async def authorization(self, server: ServerConfig, auth: ExchangeAuth, caller: UpstreamCaller) -> str:
        """The ``Authorization`` value for ``caller`` at ``server`` (exchanging when none is held)."""
        key = self._key(server, auth, caller)
        async with self._lock(key):
            presented = self._held.get(key)
            if presented is None:
                _token, lifetime, presented = await self._exchange(server, auth, caller)
                # No lifetime: held briefly; an absurd one (or none left): capped, or used just once.
                hold = UNKNOWN_HOLD_S if lifetime is None else min(lifetime, MAX_HOLD_S)
                if hold > 0:
                    received = time.time()
                    self._held.put(key, presented, received + hold, received=received)
            return presented

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
            scope = challenge.scope[:200] if challenge.scope else ""
            # Named only when it is not the refused token handed back (a hostile upstream's echo).
            shown = scope and not (sent and any(part in sent for part in scope.split() if len(part) >= 8))
            named = f" (it needs scope {scope})" if shown else ""
            raise UpstreamError(f"{server.name}: the upstream refused this request (HTTP 403){named}")
        key = self._key(server, auth, caller)
        async with self._lock(key):
            self._held.drop(key, sent)
        if isinstance(auth, IdJagAuth) and challenge.resource_metadata is not None:
            await self.ctx.discovered(server, challenge)  # re-read: the upstream may have moved
