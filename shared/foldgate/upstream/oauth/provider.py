"""The Authorization header for one upstream request, per (tenant, server, subject).

The upstream client asks :meth:`TokenProvider.authorization` before opening (or reusing) a session,
and tells :meth:`TokenProvider.refused` when the upstream answered 401/403 so the request can be sent
once more with a fresh token:

* **Refresh before expiry.** A grant within its margin of expiry is refreshed first: ``skew_s`` (60 s),
  but at most a quarter of the token's lifetime (from its issue), so a 45-second token is used for
  ~34 s, not refreshed on every request (see :func:`refresh_margin`). One refresh at a time per grant
  in this process; across instances the store's conditional write decides: the
  loser re-reads and uses the winner's tokens (a rotating server has already invalidated the loser's
  refresh token, so it must not overwrite the winner's).
* **Expiry mid-call.** A 401 for the token just sent forces a refresh; the caller retries once (the
  upstream refused before running anything).
* **Forgotten client.** ``invalid_client`` on refresh means the authorization server forgot foldgate's
  registration: the grant becomes ``needs_consent`` (its refresh token was bound to that client) and
  foldgate registers again (``renewal``), so the next connect works. A grant issued to another client
  than the one in use now is ``needs_consent`` without a request.
* **Issuer pinning.** A refresh goes only to the authorization server sealed with the grant: when
  discovery names another one now (or the grant names none), the grant becomes ``needs_consent`` and
  nothing is sent. A 401 discovers again first (the upstream may have moved to another authorization
  server, SEP-2352): the grant then needs consent at the new one, with that reason, never "expired".
* **Revoked grant.** ``invalid_grant`` on refresh marks the grant ``needs_consent`` and raises
  :class:`UpstreamConsentError` naming the connect route, unless the stored grant moved on meanwhile
  (another instance rotated it). No retry loop: a ``needs_consent`` grant is never refreshed again.
  Every refresh re-reads the stored grant first (under the per-grant lock), so requests that meet a
  revoked grant at once, here or on another instance, send its dead refresh token once: the ones
  behind see ``needs_consent`` and stop; a grant another instance refreshed meanwhile is used as is.
* **Step-up.** 403 ``insufficient_scope`` compares the scope the challenge names with the scope held
  (``step_up``): held already, it is the tool's authorization failure (an error, no reconnect);
  missing, the grant gets a pending step-up for the union and stays usable for the tools its scope
  allows, while the tool that needs more answers consent-needed; identical step-ups are bounded.
* **client_credentials.** In :mod:`foldgate.upstream.oauth.machine`: tokens fetched with the configured
  secret or private key, kept in memory per (tenant, server) until near expiry; a 401 drops the cached
  token; a refusal is an :class:`UpstreamAuthorizationError` naming the server's error code.
* **token_exchange, id_jag.** Exchanged per (tenant, server, subject) and kept in memory until near
  expiry, by :class:`~foldgate.upstream.oauth.exchanged.ExchangedTokens` (same margin rule).
* **workload_jwt.** The JWT-bearer grant, in :mod:`foldgate.upstream.oauth.workload` (no retry after a
  refusal). Every machine grant's outcome is recorded (``outcomes``: status and audit).

Tokens never appear in a log line or an error message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Final, NoReturn

from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import (
    ClientCredentialsAuth,
    IdJagAuth,
    TokenExchangeAuth,
    WorkloadJwtAuth,
    per_person,
)
from foldgate.errors import FoldgateError, UpstreamConsentError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller
from foldgate.store.grants.base import ClientRegistration, UpstreamGrant
from foldgate.upstream.oauth.assertions import AssertionReader
from foldgate.upstream.oauth.connect_links import LINK_SECONDS, sign_connect_link
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import (
    Challenge,
    Discovered,
    challenge_of,
)
from foldgate.upstream.oauth.dpop import NONCE_ERROR
from foldgate.upstream.oauth.exchanged import ExchangedTokens
from foldgate.upstream.oauth.http import checked_endpoint
from foldgate.upstream.oauth.machine import MachineTokens
from foldgate.upstream.oauth.registration import client_auth
from foldgate.upstream.oauth.renewal import FORGOTTEN_REASON, self_registered
from foldgate.upstream.oauth.step_up import StepUps
from foldgate.upstream.oauth.tokens import TokenRefusedError, grant_from, request_token
from foldgate.upstream.oauth.workload import WorkloadGrants

__all__ = [
    "ConnectHint",
    "ConnectLink",
    "TokenProvider",
    "refresh_margin",
    "signed_link",
]

log = logging.getLogger(__name__)

SKEW_SECONDS: Final = 60.0
# The margin is at most this share of a token's lifetime (see refresh_margin).
MARGIN_SHARE: Final = 0.25
# Why a grant needs consent, as /api/v1/status shows it (foldgate's words, never the server's).
REVOKED_REASON: Final = "the authorization server refused the refresh token (revoked or expired)"
NO_REFRESH_REASON: Final = "the access token expired and the upstream gave no refresh token"
SCOPE_REASON: Final = "the upstream needs more scope"
NEEDS_CONSENT_REASON: Final = "needs consent again (revoked, expired or more scope needed)"
REFUSED_CLIENT_REASON: Final = (
    "the authorization server refused the configured client (invalid_client): check the client_id and "
    "secret in the server's auth: block"
)
OTHER_CLIENT_REASON: Final = "the grant was issued to a client registration foldgate no longer uses"
OTHER_ISSUER_REASON: Final = (
    "the upstream moved to another authorization server than the one that issued the grant (its "
    "protected resource metadata names a new issuer): consent there"
)

ConnectHint = Callable[[str, str, str], str]
"""``hint(tenant, server, subject)`` -> how a person connects (a route or a signed link)."""

ConnectLink = Callable[[str, str, str], str]
"""``link(tenant, server, subject)`` -> the signed URL that end user opens to connect their account."""


def _default_hint(tenant: str, server: str, subject: str) -> str:
    if subject == SHARED_SUBJECT:
        return f"an operator connects it with POST /api/v1/servers/{server}/connect?tenant={tenant}"
    return f"connect your account for {server!r} (GET /oauth/connect with your link)"


def signed_link(secret: bytes, public_url: str) -> ConnectLink:
    """Signed, single-use, short-lived per-user connect links (``foldgate.upstream.oauth.connect_links``)."""

    def link(tenant: str, server: str, subject: str) -> str:
        return sign_connect_link(secret, public_url, tenant, server, subject)

    return link


def refresh_margin(grant: UpstreamGrant, skew_s: float = SKEW_SECONDS, share: float = MARGIN_SHARE) -> float:
    """How long before its expiry ``grant``'s access token is refreshed: ``skew_s``, but at most
    ``share`` (``MARGIN_SHARE``) of its lifetime, measured from when foldgate received it
    (``issued_at``; a grant stored before that was kept uses its last write time).

    The margin covers clock skew and a request in flight while the token expires; a 401 is refreshed
    and sent once more anyway. A fixed 60 s margin on a token living 60 s or less would refresh it on
    every request (each refresh yields another such token); a quarter of the lifetime keeps three
    quarters of every token in use, so a grant is refreshed at most once per 3/4 of its tokens' life
    whatever that life is, and long-lived tokens keep the 60 s margin.
    """
    issued = grant.issued_at if grant.issued_at is not None else grant.updated_at
    return _margin(issued, grant.expires_at, skew_s, share)


def _margin(issued: float, expires: float | None, skew_s: float, share: float) -> float:
    if expires is None or issued <= 0 or expires <= issued:
        return skew_s  # no expiry, or issue time unknown (stored before it was kept): the cap
    return min(skew_s, (expires - issued) * share)


def _link_text(server: str, link: str) -> str:
    return (
        f"the user opens {link} in their own browser to connect their own {server} account (single use, "
        f"valid {LINK_SECONDS // 60} minutes; a new call gives a new link), then retry"
    )


class TokenProvider:
    """Authorization headers for OAuth upstreams (see the module docstring)."""

    def __init__(
        self,
        ctx: OAuthContext,
        *,
        skew_s: float = SKEW_SECONDS,
        margin_share: float = MARGIN_SHARE,
        hint: ConnectHint | None = None,
        link: ConnectLink | None = None,
        assertions: AssertionReader | None = None,
    ) -> None:
        self.ctx = ctx
        self.skew_s = skew_s
        self.margin_share = margin_share  # 1.0 with a skew past any lifetime: every use refreshes
        self.hint = hint or _default_hint
        # With ``link``, a per-user consent error carries the link as ``connect_url`` (for the edge's
        # URL-mode elicitation) and names it in its message.
        self.link = link
        self._loop: asyncio.AbstractEventLoop | None = None
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}
        # client_credentials tokens as presented, by (tenant, server, url, client id): a config change is
        # a new entry. Each with when it was received and when it expires (the margin scales with it).
        self.machine = MachineTokens(ctx, margin=self._machine_margin, lock=self._lock)
        self._step_ups = StepUps()
        self.workload = WorkloadGrants(
            ctx, margin=self._machine_margin, lock=self._lock, assertions=assertions
        )
        self.exchanged = ExchangedTokens(
            ctx, lambda issued, expires: _margin(issued, expires, self.skew_s, self.margin_share)
        )
        self.refreshes = 0  # refresh requests sent (observability and tests)

    def _machine_margin(self, issued: float, expires: float | None) -> float:
        return _margin(issued, expires, self.skew_s, self.margin_share)

    def _subject(self, server: ServerConfig, caller: UpstreamCaller) -> str:
        # per_user: the caller's own grant; the indexer (shared subject) lists with the shared one.
        return caller.subject if per_person(server.auth) else SHARED_SUBJECT

    def _lock(self, key: tuple[str, str, str]) -> asyncio.Lock:
        # A lock belongs to the loop it first waits on; a new loop (a test, asyncio.run) gets new ones.
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._locks = loop, {}
        lock = self._locks.get(key)
        if lock is None:
            lock = self._locks[key] = asyncio.Lock()
        return lock

    def _consent_error(self, tenant: str, server: str, subject: str, why: str) -> UpstreamConsentError:
        if self.link is None or subject == SHARED_SUBJECT:
            return UpstreamConsentError(f"{server}: {why}; {self.hint(tenant, server, subject)}")
        url = self.link(tenant, server, subject)
        return UpstreamConsentError(f"{server}: {why}; {_link_text(server, url)}", connect_url=url)

    async def authorization(self, server: ServerConfig, caller: UpstreamCaller | None) -> str | None:
        """The ``Authorization`` value for a request to ``server`` for ``caller`` (None: static auth)."""
        auth = server.auth
        if auth.kind == "static":
            return None
        if caller is None:
            raise UpstreamError(f"{server.name}: an OAuth upstream is called only on behalf of a tenant")
        if isinstance(auth, ClientCredentialsAuth):
            return await self.machine.authorization(server, auth, caller.tenant)
        if isinstance(auth, WorkloadJwtAuth):
            return await self.workload.authorization(server, auth, caller.tenant)
        if isinstance(auth, TokenExchangeAuth | IdJagAuth):
            return await self.exchanged.authorization(server, auth, caller)
        subject = self._subject(server, caller)
        key = (caller.tenant, server.name, subject)
        async with self._lock(key):
            grant = self.ctx.grant(*key)
            if grant is None:
                raise self._consent_error(*key, "not connected")
            if grant.state == "needs_consent":
                # The reason recorded when it was marked (by this or another call), else the usual ones.
                raise self._consent_error(*key, grant.reason or NEEDS_CONSENT_REASON)
            margin = refresh_margin(grant, self.skew_s, self.margin_share)
            if grant.expires_at is not None and grant.expires_at - margin <= time.time():
                grant = await self._refresh(server, grant)
            return self.ctx.present(caller.tenant, grant.token_type, grant.access_token)

    async def refused(
        self,
        server: ServerConfig,
        caller: UpstreamCaller | None,
        sent: str | None,
        status: int,
        header: str | None,
    ) -> None:
        """The upstream refused ``sent`` with ``status``: make the next attempt's header better, or raise
        UpstreamConsentError when only a person can (revoked grant, more scope)."""
        auth = server.auth
        if auth.kind == "static" or caller is None:
            raise UpstreamError(f"{server.name}: the upstream refused the credentials (HTTP {status})")
        challenge = challenge_of(header)
        if challenge.error == NONCE_ERROR:  # answered once with its nonce already: not an expired token
            raise UpstreamError(f"{server.name}: the upstream refused the DPoP proof's nonce again")
        if isinstance(auth, ClientCredentialsAuth | WorkloadJwtAuth):
            if isinstance(auth, WorkloadJwtAuth):
                self.workload.drop(caller.tenant, server.name)
            else:
                self.machine.drop(caller.tenant, server, auth)
            if status == 403:
                raise UpstreamError(f"{server.name}: the upstream refused the client's scope (HTTP 403)")
            return
        if isinstance(auth, TokenExchangeAuth | IdJagAuth):
            await self.exchanged.refused(server, auth, caller, sent, status, header)
            return
        subject = self._subject(server, caller)
        key = (caller.tenant, server.name, subject)
        async with self._lock(key):
            grant = self.ctx.grant(*key, fresh=True)  # the refusal may mean the memo is stale
            if grant is None:
                raise self._consent_error(*key, "not connected")
            if grant.state == "needs_consent":
                # Marked by a request that held the lock before (or another instance): never refreshed.
                raise self._consent_error(*key, grant.reason or NEEDS_CONSENT_REASON)
            if sent is not None and sent.partition(" ")[2] != grant.access_token:
                return  # another request (or instance) already replaced the refused token
            if status == 403 and challenge.error == "insufficient_scope":
                # The challenge's scope, else what the upstream's metadata lists (the spec's order).
                named = challenge.scope or (await self.ctx.discovered(server)).scope
                self._step_up(server, grant, named)
            if status == 403:
                raise UpstreamError(f"{server.name}: the upstream refused the request (HTTP 403)")
            # A 401 may mean the upstream moved to another authorization server: discover again.
            await self._refresh(server, grant, challenge)

    def _step_up(self, server: ServerConfig, grant: UpstreamGrant, named: str | None) -> NoReturn:
        """Answer a 403 ``insufficient_scope`` to ``grant`` (see ``step_up``); always raises."""
        verdict = self._step_ups.judge(grant, named)
        key = (grant.tenant, grant.server, grant.subject)
        asked = " ".join(verdict.named) or "none named"
        if verdict.kind == "held":
            raise UpstreamError(
                f"{server.name}: the upstream refused this request for lack of scope ({asked}) the "
                "connection already holds: an authorization failure of this tool upstream (reconnecting "
                "would not change it)"
            )
        missing = " ".join(verdict.missing)
        if verdict.kind == "exhausted":
            raise UpstreamError(
                f"{server.name}: this tool still needs scope {missing} after {self._step_ups.limit} "
                "consents: the authorization server does not grant it (check the scopes it allows "
                "this client)"
            )
        if verdict.kind == "step_up":
            marked = replace(grant, step_up=verdict.wanted, reason=SCOPE_REASON)
            stored = self.ctx.store.put_grant(marked)
            self.ctx.remember(key, stored)  # None (another writer won): re-read next time
        raise self._consent_error(*key, f"this tool needs more scope ({missing})")

    def _mark_needs_consent(self, grant: UpstreamGrant, reason: str) -> None:
        marked = replace(grant, state="needs_consent", reason=reason, updated_at=time.time())
        stored = self.ctx.store.put_grant(marked)
        self.ctx.remember((grant.tenant, grant.server, grant.subject), stored)  # None: re-read next time
        if stored is None:
            log.info(
                "%s/%s: grant changed while marking it; left as the winner wrote it",
                grant.tenant,
                grant.server,
            )

    def _before_refresh(self, grant: UpstreamGrant) -> tuple[UpstreamGrant, bool]:
        """The stored grant, re-read before a refresh token is spent, and whether its access token can
        be used as it is (another instance refreshed it meanwhile). Raises when it needs consent
        (marked by another request or instance: its refresh token is dead, never send it again)."""
        key = (grant.tenant, grant.server, grant.subject)
        current = self.ctx.grant(*key, fresh=True)
        if current is None:
            raise self._consent_error(*key, "not connected")
        if current.state == "needs_consent":
            raise self._consent_error(*key, current.reason or NEEDS_CONSENT_REASON)
        fresh = current.access_token != grant.access_token and (
            current.expires_at is None
            or current.expires_at - refresh_margin(current, self.skew_s, self.margin_share) > time.time()
        )
        return current, fresh

    async def _refresh(
        self, server: ServerConfig, grant: UpstreamGrant, challenge: Challenge | None = None
    ) -> UpstreamGrant:
        """A fresh access token for ``grant`` (called under its lock); ``challenge``: the 401's, which
        makes discovery run again (the cached result may name an authorization server it left)."""
        key = (grant.tenant, grant.server, grant.subject)
        grant, usable = self._before_refresh(grant)  # a rotated refresh token is the one to send
        if usable:
            return grant
        if challenge is not None and not (await self.ctx.discovered(server, challenge)).issued(grant.issuer):
            self._mark_needs_consent(grant, OTHER_ISSUER_REASON)
            raise self._consent_error(*key, OTHER_ISSUER_REASON)
        if not grant.refresh_token:
            self._mark_needs_consent(grant, NO_REFRESH_REASON)
            raise self._consent_error(*key, NO_REFRESH_REASON)
        found = await self.ctx.discovered(server)
        if not found.issued(grant.issuer):
            # The refresh token and the client's secret go only to the issuer sealed with the grant.
            self._mark_needs_consent(grant, OTHER_ISSUER_REASON)
            raise self._consent_error(*key, OTHER_ISSUER_REASON)
        token_url = checked_endpoint(
            found.endpoint("token_endpoint"), "token_endpoint", allow_loopback=self.ctx.allow_private
        )
        registration = await self.ctx.client(grant.tenant, server, found)
        if grant.client_id is not None and grant.client_id != registration.client_id:
            # A refresh token is bound to its client (RFC 6749 6): sending it with another is futile.
            self._mark_needs_consent(grant, OTHER_CLIENT_REASON)
            raise self._consent_error(*key, OTHER_CLIENT_REASON)
        client = client_auth(registration)
        form = {"grant_type": "refresh_token", "refresh_token": grant.refresh_token}
        if grant.resource:
            form["resource"] = grant.resource
        self.refreshes += 1
        try:
            token = await request_token(
                token_url, form, client, issuer=found.issuer, allow_private=self.ctx.allow_private,
                dpop=self.ctx.dpop(grant.tenant, server),
            )  # fmt: skip
        except TokenRefusedError as exc:
            if exc.error not in ("invalid_grant", "unauthorized_client", "invalid_client"):
                raise UpstreamError(f"{server.name}: {exc.message}") from None
            current = self.ctx.grant(*key, fresh=True)
            if (
                current is not None
                and current.refresh_token != grant.refresh_token
                and current.state == "connected"
            ):
                return current  # another instance rotated it first: its tokens are the good ones
            if exc.error == "invalid_client":
                ours = self_registered(registration)  # only those are renewed
                reason = FORGOTTEN_REASON if ours else REFUSED_CLIENT_REASON
                self._mark_needs_consent(current or grant, reason)
                if ours:
                    await self._register_again(server, found, registration)
                raise self._consent_error(*key, reason) from None
            self._mark_needs_consent(current or grant, REVOKED_REASON)
            raise self._consent_error(*key, "the upstream revoked the grant") from None
        fresh = grant_from(
            token,
            tenant=grant.tenant,
            server=grant.server,
            subject=grant.subject,
            issuer=found.issuer,
            resource=grant.resource,
            previous=grant,
            client_id=registration.client_id,
        )
        stored = self.ctx.store.put_grant(fresh)
        if stored is not None:
            self.ctx.remember(key, stored)
            return stored
        # Lost the race to another writer: its grant is the one the store (and the server) keeps.
        winner = self.ctx.grant(*key, fresh=True)
        return winner if winner is not None and winner.state == "connected" else fresh

    async def _register_again(
        self, server: ServerConfig, found: Discovered, refused: ClientRegistration
    ) -> None:
        """Best effort: the consent error is what the caller gets, registered again or not (capped,
        another instance at it, the authorization server down: the next connect tries again)."""
        try:
            await self.ctx.forget_client(server, found, refused)
        except FoldgateError as exc:
            log.warning("%s/%s: not registered again yet: %s", refused.tenant, server.name, exc.message)
