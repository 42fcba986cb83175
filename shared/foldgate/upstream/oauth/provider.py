"""The Authorization header for one upstream request, per (tenant, server, subject).

The upstream client asks :meth:`TokenProvider.authorization` before opening (or reusing) a session,
and tells :meth:`TokenProvider.refused` when the upstream answered 401/403 so the request can be sent
once more with a fresh token:

* **Refresh before expiry.** A grant within ``skew_s`` of its expiry is refreshed first. One refresh at
  a time per grant in this process; across instances the store's conditional write decides: the
  loser re-reads and uses the winner's tokens (a rotating server has already invalidated the loser's
  refresh token, so it must not overwrite the winner's).
* **Expiry mid-call.** A 401 for the token just sent forces a refresh; the caller retries once (the
  upstream refused before running anything).
* **Forgotten client.** ``invalid_client`` on refresh means the authorization server forgot foldgate's
  registration: the grant becomes ``needs_consent`` (its refresh token was bound to that client) and
  foldgate registers again (``renewal``), so the next connect works. A grant issued to another client
  than the one in use now is ``needs_consent`` without a request.
* **Revoked grant.** ``invalid_grant`` on refresh marks the grant ``needs_consent`` and raises
  :class:`UpstreamConsentError` naming the connect route, unless the stored grant moved on meanwhile
  (another instance rotated it). No retry loop: a ``needs_consent`` grant is never refreshed again.
* **Step-up.** 403 ``insufficient_scope`` marks the grant ``needs_consent`` with the union of the
  granted and the challenged scopes; the next consent asks for that.
* **client_credentials.** Tokens are fetched with the configured secret or private key and kept in
  memory per (tenant, server) until near expiry; a 401 drops the cached token.

Tokens never appear in a log line or an error message.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Final

from foldgate.auth.connect_links import LINK_SECONDS, sign_connect_link
from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import ClientCredentialsAuth, PerUserAuth
from foldgate.errors import FoldgateError, UpstreamConsentError, UpstreamError
from foldgate.model.caller import SHARED_SUBJECT, UpstreamCaller
from foldgate.store.grants.base import ClientRegistration, UpstreamGrant
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import Discovered, authorization_server_metadata, challenge_of
from foldgate.upstream.oauth.http import checked_endpoint
from foldgate.upstream.oauth.registration import client_auth
from foldgate.upstream.oauth.renewal import FORGOTTEN_REASON, self_registered
from foldgate.upstream.oauth.tokens import ClientAuth, TokenRefusedError, grant_from, request_token

__all__ = [
    "ConnectHint",
    "ConnectLink",
    "TokenProvider",
    "discover_issuer_endpoint",
    "signed_link",
]

log = logging.getLogger(__name__)

SKEW_SECONDS: Final = 60.0
# Why a grant needs consent, as /api/v1/status shows it (foldgate's words, never the server's).
REVOKED_REASON: Final = "the authorization server refused the refresh token (revoked or expired)"
NO_REFRESH_REASON: Final = "the access token expired and the upstream gave no refresh token"
SCOPE_REASON: Final = "the upstream needs more scope"
REFUSED_CLIENT_REASON: Final = (
    "the authorization server refused the configured client (invalid_client): check the client_id and "
    "secret in the server's auth: block"
)
OTHER_CLIENT_REASON: Final = "the grant was issued to a client registration foldgate no longer uses"

ConnectHint = Callable[[str, str, str], str]
"""``hint(tenant, server, subject)`` -> how a person connects (a route or a signed link)."""

ConnectLink = Callable[[str, str, str], str]
"""``link(tenant, server, subject)`` -> the signed URL that end user opens to connect their account."""


def _default_hint(tenant: str, server: str, subject: str) -> str:
    if subject == SHARED_SUBJECT:
        return f"an operator connects it with POST /api/v1/servers/{server}/connect?tenant={tenant}"
    return f"connect your account for {server!r} (GET /oauth/connect with your link)"


def signed_link(secret: bytes, public_url: str) -> ConnectLink:
    """Signed, single-use, short-lived per-user connect links (``foldgate.auth.connect_links``)."""

    def link(tenant: str, server: str, subject: str) -> str:
        return sign_connect_link(secret, public_url, tenant, server, subject)

    return link


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
        hint: ConnectHint | None = None,
        link: ConnectLink | None = None,
    ) -> None:
        self.ctx = ctx
        self.skew_s = skew_s
        self.hint = hint or _default_hint
        # With ``link``, a per-user consent error carries the link as ``connect_url`` (for the edge's
        # URL-mode elicitation) and names it in its message.
        self.link = link
        self._loop: asyncio.AbstractEventLoop | None = None
        self._locks: dict[tuple[str, str, str], asyncio.Lock] = {}
        # client_credentials tokens by (tenant, server, url, client id): a config change is a new entry.
        self._machine: dict[tuple[str, str, str, str], tuple[str, float | None]] = {}
        self.refreshes = 0  # refresh requests sent (observability and tests)

    def _subject(self, server: ServerConfig, caller: UpstreamCaller) -> str:
        # per_user: the caller's own grant; the indexer (shared subject) lists with the shared one.
        return caller.subject if isinstance(server.auth, PerUserAuth) else SHARED_SUBJECT

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
            return await self._machine_token(server, auth, caller.tenant)
        subject = self._subject(server, caller)
        key = (caller.tenant, server.name, subject)
        async with self._lock(key):
            grant = self.ctx.grant(*key)
            if grant is None:
                raise self._consent_error(*key, "not connected")
            if grant.state == "needs_consent":
                # The reason recorded when it was marked (by this or another call), else the usual ones.
                why = grant.reason or "needs consent again (revoked, expired or more scope needed)"
                raise self._consent_error(*key, why)
            if grant.expires_at is not None and grant.expires_at - self.skew_s <= time.time():
                grant = await self._refresh(server, grant)
            return f"Bearer {grant.access_token}"

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
        if isinstance(auth, ClientCredentialsAuth):
            self._machine.pop((caller.tenant, server.name, server.url or "", auth.client_id), None)
            if status == 403:
                raise UpstreamError(f"{server.name}: the upstream refused the client's scope (HTTP 403)")
            return
        subject = self._subject(server, caller)
        key = (caller.tenant, server.name, subject)
        async with self._lock(key):
            grant = self.ctx.grant(*key, fresh=True)  # the refusal may mean the memo is stale
            if grant is None:
                raise self._consent_error(*key, "not connected")
            if sent is not None and f"Bearer {grant.access_token}" != sent:
                return  # another request (or instance) already replaced the refused token
            if status == 403 and challenge.error == "insufficient_scope":
                # The SDK's scope union: step-up keeps what was granted before.
                from mcp.client.auth.utils import union_scopes

                # The challenge's scope, else what the upstream's metadata lists (the spec's order).
                named = challenge.scope or (await self.ctx.discovered(server)).scope
                wanted = union_scopes(grant.scope, named)
                self._mark_needs_consent(grant, SCOPE_REASON, scope=wanted)
                raise self._consent_error(*key, f"the upstream needs more scope ({wanted})")
            if status == 403:
                raise UpstreamError(f"{server.name}: the upstream refused the request (HTTP 403)")
            await self._refresh(server, grant)

    def _mark_needs_consent(self, grant: UpstreamGrant, reason: str, *, scope: str | None = None) -> None:
        marked = replace(
            grant, state="needs_consent", scope=scope or grant.scope, reason=reason, updated_at=time.time()
        )
        stored = self.ctx.store.put_grant(marked)
        self.ctx.remember((grant.tenant, grant.server, grant.subject), stored)  # None: re-read next time
        if stored is None:
            log.info(
                "%s/%s: grant changed while marking it; left as the winner wrote it",
                grant.tenant,
                grant.server,
            )

    async def _refresh(self, server: ServerConfig, grant: UpstreamGrant) -> UpstreamGrant:
        """A fresh access token for ``grant`` (called under its lock)."""
        key = (grant.tenant, grant.server, grant.subject)
        if not grant.refresh_token:
            self._mark_needs_consent(grant, NO_REFRESH_REASON)
            raise self._consent_error(*key, NO_REFRESH_REASON)
        found = await self.ctx.discovered(server)
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
                token_url, form, client, issuer=found.issuer, allow_private=self.ctx.allow_private
            )
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

    async def _machine_token(self, server: ServerConfig, auth: ClientCredentialsAuth, tenant: str) -> str:
        key = (tenant, server.name, server.url or "", auth.client_id)
        async with self._lock((tenant, server.name, "\x00machine")):
            held = self._machine.get(key)
            if held is not None and (held[1] is None or held[1] - self.skew_s > time.time()):
                return f"Bearer {held[0]}"
            issuer = auth.issuer
            token_url = auth.token_url
            if token_url is None:
                assert issuer is not None  # the config requires one of the two
                token_url = await discover_issuer_endpoint(
                    issuer, server, allow_private=self.ctx.allow_private
                )
            secret, pem = await self.ctx.machine_secret(auth)
            method = "private_key_jwt" if pem else "client_secret_basic"
            client = ClientAuth(auth.client_id, method, secret, private_key=pem)
            form = {"grant_type": "client_credentials"}
            assert server.url is not None  # OAuth kinds require an HTTP upstream
            form["resource"] = auth.resource or server.url
            if auth.scopes:
                form["scope"] = " ".join(auth.scopes)
            if auth.audience:
                form["audience"] = auth.audience
            token = await request_token(
                token_url, form, client, issuer=issuer or token_url, allow_private=self.ctx.allow_private
            )
            expires = time.time() + token.expires_in if token.expires_in else None
            self._machine[key] = (token.access_token, expires)
            return f"Bearer {token.access_token}"


async def discover_issuer_endpoint(issuer: str, server: ServerConfig, *, allow_private: bool) -> str:
    """The token endpoint of a configured issuer (RFC 8414 / OIDC discovery, SSRF-guarded)."""
    assert server.url is not None  # OAuth kinds require an HTTP upstream
    metadata = await authorization_server_metadata(issuer, server.url, allow_private=allow_private)
    return checked_endpoint(str(metadata.token_endpoint), "token_endpoint", allow_loopback=allow_private)
