"""``client_credentials``: machine-to-machine tokens (RFC 6749 section 4.4), in memory.

Tokens are fetched with the configured client secret (``client_secret_basic``) or private key
(``private_key_jwt``), at ``token_url`` or the token endpoint ``issuer``'s metadata names, and kept per
(tenant, server, url, client id) until their refresh margin (the provider's rule); a config change of
the url or the client is a new entry. A 401 from the upstream drops the token (:meth:`drop`). With
``dpop: true`` the request carries a DPoP proof and a bound token is presented with proofs. A refusal is
:class:`~foldgate.errors.UpstreamAuthorizationError` naming the server's error code, and, as for
``workload_jwt``, nothing is asked again until the server's ``auth:`` block changes or
``REFUSED_BACKOFF_S`` passes (every call meanwhile gets the same error at once). Every outcome is
recorded (``ctx.outcomes``: status and an ``upstream.grant`` audit event).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable

from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import ClientCredentialsAuth
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.discovery import authorization_server_metadata
from foldgate.upstream.oauth.held import HeldTokens, Margin
from foldgate.upstream.oauth.http import checked_endpoint
from foldgate.upstream.oauth.tokens import ClientAuth, TokenRefusedError, request_token
from foldgate.upstream.oauth.workload import REFUSED_BACKOFF_S

__all__ = ["MachineTokens", "discover_issuer_endpoint"]

LockOf = Callable[[tuple[str, str, str]], asyncio.Lock]
_Key = tuple[str, str, str, str]


class MachineTokens:
    """client_credentials tokens of one token provider (see the module docstring)."""

    def __init__(
        self, ctx: OAuthContext, *, margin: Margin, lock: LockOf, backoff_s: float = REFUSED_BACKOFF_S
    ) -> None:
        self.ctx = ctx
        self.margin = margin
        self.lock = lock
        self.backoff_s = backoff_s
        # The last refusal per (tenant, server): the config it was for, the error raised, when.
        self._refused: dict[tuple[str, str], tuple[str, UpstreamAuthorizationError, float]] = {}
        self._held: HeldTokens[_Key] = HeldTokens(margin)

    @staticmethod
    def _key(tenant: str, server: ServerConfig, auth: ClientCredentialsAuth) -> _Key:
        return (tenant, server.name, server.url or "", auth.client_id)

    def drop(self, tenant: str, server: ServerConfig, auth: ClientCredentialsAuth) -> None:
        """The upstream refused the token (401): the next request gets a new one."""
        self._held.drop(self._key(tenant, server, auth))

    async def authorization(self, server: ServerConfig, auth: ClientCredentialsAuth, tenant: str) -> str:
        """The ``Authorization`` value for ``server``: a held token, or one fetched now."""
        key = self._key(tenant, server, auth)
        async with self.lock((tenant, server.name, "\x00machine")):
            held = self._held.get(key)
            if held is not None:
                return held
            config = hashlib.sha256(f"{server.url}\n{auth.model_dump_json()}".encode()).hexdigest()
            refused = self._refused.get((tenant, server.name))
            if refused is not None and refused[0] == config and time.time() < refused[2] + self.backoff_s:
                raise refused[1]
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
            outcomes = self.ctx.outcomes
            try:
                token = await request_token(
                    token_url,
                    form,
                    client,
                    issuer=issuer or token_url,
                    allow_private=self.ctx.allow_private,
                    dpop=self.ctx.dpop(tenant, server),
                )
            except TokenRefusedError as exc:
                outcomes.record(tenant, server.name, auth.kind, "refused", exc.error or "no_error_code")
                error = UpstreamAuthorizationError(
                    f"{server.name}: {exc.message}; nothing is asked again until the server's auth: block "
                    f"changes or {round(self.backoff_s)} s pass"
                )
                self._refused[(tenant, server.name)] = (config, error, time.time())
                raise error from None
            except UpstreamError:
                outcomes.record(tenant, server.name, auth.kind, "failed", "token_endpoint_unreachable")
                raise
            now = time.time()
            expires = now + token.expires_in if token.expires_in else None
            presented = self.ctx.present(tenant, token.token_type, token.access_token)
            self._refused.pop((tenant, server.name), None)
            self._held.put(key, presented, expires, received=now)
            outcomes.record(tenant, server.name, auth.kind, "obtained", expires_at=expires)
            return presented


async def discover_issuer_endpoint(issuer: str, server: ServerConfig, *, allow_private: bool) -> str:
    """The token endpoint of a configured issuer (RFC 8414 / OIDC discovery, SSRF-guarded)."""
    assert server.url is not None  # OAuth kinds require an HTTP upstream
    metadata = await authorization_server_metadata(issuer, server.url, allow_private=allow_private)
    return checked_endpoint(str(metadata.token_endpoint), "token_endpoint", allow_loopback=allow_private)
