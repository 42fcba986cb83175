"""What every OAuth step of one process shares: the grant store, secrets, foldgate's public URL, the
private-network policy, and a short cache of discovery results.

Discovery is cached per upstream URL for ``DISCOVERY_SECONDS`` so a warm instance refreshing tokens
does not re-fetch two metadata documents each time; a cold instance (the callback may land on one the
connect request never touched) discovers again, which is what makes the flow stateless.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Final

from foldgate.config.tenant import ServerConfig
from foldgate.config.upstream_auth import ClientCredentialsAuth, CodeFlowAuth
from foldgate.errors import ConfigError
from foldgate.store.grants.base import ClientRegistration, GrantStore, UpstreamGrant
from foldgate.upstream.oauth.discovery import Challenge, Discovered, discover
from foldgate.upstream.oauth.dpop import DPoPProver
from foldgate.upstream.oauth.dpop_keys import DPoPAuthorization, DPoPKeys
from foldgate.upstream.oauth.outcomes import GrantOutcomes
from foldgate.upstream.oauth.registration import CALLBACK_PATH, SecretReader, client_for, register
from foldgate.upstream.oauth.renewal import RenewalPolicy, forget

__all__ = ["DISCOVERY_SECONDS", "GRANT_SECONDS", "OAuthContext"]

DISCOVERY_SECONDS: Final = 600.0
# How long a warm instance reuses a grant it read, instead of a store read (and an unseal) per request.
# A disconnect made on another instance is seen within this time; one made here at once.
GRANT_SECONDS: Final = 30.0

GrantKey = tuple[str, str, str]


@dataclass
class OAuthContext:
    """Shared parts of the upstream OAuth client (one per process)."""

    store: GrantStore
    read_secret: SecretReader
    public_url: str | None
    allow_private: bool
    renewal: RenewalPolicy = field(default_factory=RenewalPolicy)
    # The machine grants' latest outcomes (status) and their audit events (set its recorder).
    outcomes: GrantOutcomes = field(default_factory=GrantOutcomes)
    _found: dict[tuple[str, bool], tuple[float, Discovered]] = field(default_factory=dict)
    _grants: dict[GrantKey, tuple[float, UpstreamGrant]] = field(default_factory=dict)
    _dpop: DPoPKeys | None = None

    def dpop(self, tenant: str, server: ServerConfig) -> DPoPProver | None:
        """The tenant's DPoP prover when ``server`` asks for DPoP-bound tokens (``dpop: true``)."""
        return self.prover(tenant) if getattr(server.auth, "dpop", False) else None

    def prover(self, tenant: str) -> DPoPProver:
        """The tenant's DPoP prover (its key shared by every instance: ``dpop_keys``)."""
        if self._dpop is None:
            self._dpop = DPoPKeys(self.store)
        return self._dpop.prover(tenant)

    def present(self, tenant: str, token_type: str | None, token: str) -> str:
        """The Authorization value for ``token``: ``DPoP`` with a proof per request when it was issued
        as a DPoP token (bound to the tenant's key, whatever the config says now), else ``Bearer``."""
        if (token_type or "").lower() == "dpop":
            return DPoPAuthorization(token, self.prover(tenant))
        return f"Bearer {token}"

    def grant(self, tenant: str, server: str, subject: str, *, fresh: bool = False) -> UpstreamGrant | None:
        """The stored grant, from this instance's short memo unless ``fresh`` (or it is too old)."""
        key = (tenant, server, subject)
        hit = self._grants.get(key)
        if not fresh and hit is not None and time.monotonic() - hit[0] < GRANT_SECONDS:
            return hit[1]
        found = self.store.get_grant(tenant, server, subject)
        self.remember(key, found)
        return found

    def remember(self, key: GrantKey, grant: UpstreamGrant | None) -> None:
        """Note what the store holds for ``key`` now (None: nothing)."""
        if grant is None:
            self._grants.pop(key, None)
        else:
            self._grants[key] = (time.monotonic(), grant)

    @property
    def redirect_uri(self) -> str:
        """Where authorization servers send the browser back: ``<public_url>/oauth/callback``."""
        if not self.public_url:
            raise ConfigError(
                "connecting an OAuth upstream needs foldgate's public URL (FOLDGATE_PUBLIC_URL, or "
                "`foldgate serve` sets it) for the /oauth/callback redirect"
            )
        return self.public_url.rstrip("/") + CALLBACK_PATH

    async def discovered(self, server: ServerConfig, challenge: Challenge | None = None) -> Discovered:
        """The upstream's authorization setup (cached; a fresh challenge always discovers again)."""
        assert server.url is not None  # OAuth kinds require an HTTP upstream (config check)
        # Only the code-flow kinds need PKCE advertised (id_jag uses the JWT-bearer grant): a result
        # found without that check is never handed to a code flow.
        code_flow = isinstance(server.auth, CodeFlowAuth)
        key = (server.url, code_flow)
        hit = self._found.get(key)
        if challenge is None and hit is not None and time.monotonic() - hit[0] < DISCOVERY_SECONDS:
            return hit[1]
        found = await discover(server.url, challenge, allow_private=self.allow_private, code_flow=code_flow)
        self._found[key] = (time.monotonic(), found)
        return found

    async def client(self, tenant: str, server: ServerConfig, found: Discovered) -> ClientRegistration:
        """The OAuth client foldgate is for this server at ``found``'s authorization server."""
        auth = server.auth
        if not isinstance(auth, CodeFlowAuth):
            raise ConfigError(f"server {server.name!r} does not use a code-flow auth kind")
        return await client_for(
            self.store,
            auth,
            found,
            tenant=tenant,
            server=server.name,
            redirect_uri=self.redirect_uri,
            public_url=self.public_url,
            read_secret=self.read_secret,
            allow_private=self.allow_private,
            renewal=self.renewal,
        )

    async def forget_client(
        self, server: ServerConfig, found: Discovered, refused: ClientRegistration
    ) -> ClientRegistration | None:
        """The token endpoint said ``invalid_client`` for ``refused``: register again if it was
        foldgate's stored DCR client (``renewal.forget``); None when nothing was renewed."""
        redirect_uri = self.redirect_uri

        def new() -> Awaitable[ClientRegistration]:
            return register(
                found, tenant=refused.tenant, server=server.name, redirect_uri=redirect_uri,
                allow_private=self.allow_private,
            )  # fmt: skip

        return await forget(self.store, refused, new, self.renewal)

    async def machine_secret(self, auth: ClientCredentialsAuth) -> tuple[str | None, str | None]:
        """(client secret, PEM private key) of a client_credentials server; exactly one is set."""
        if auth.client_secret_secret:
            return await self.read_secret(auth.client_secret_secret), None
        assert auth.private_key_secret is not None  # the config requires one of the two
        return None, await self.read_secret(auth.private_key_secret)
