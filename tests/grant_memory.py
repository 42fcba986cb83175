"""An in-memory GrantStore for the upstream OAuth tests, with the interface's conditional-write rule.

A stand-in until the real backends (store/grants/) merge; it keeps no secrets anywhere but memory.
"""

from __future__ import annotations

import time
from dataclasses import replace

from foldgate.store.grants.base import (
    ClientRegistration,
    GrantStore,
    GrantSummary,
    PendingConsent,
    UpstreamGrant,
)


class MemoryGrantStore(GrantStore):
    """Grants, clients and pending consents in dicts; ``put_grant`` checks ``version``."""

    def __init__(self) -> None:
        self.grants: dict[tuple[str, str, str], UpstreamGrant] = {}
        self.clients: dict[tuple[str, str, str], ClientRegistration] = {}
        self.pending: dict[str, PendingConsent] = {}

    def get_grant(self, tenant: str, server: str, subject: str) -> UpstreamGrant | None:
        return self.grants.get((tenant, server, subject))

    def put_grant(self, grant: UpstreamGrant) -> UpstreamGrant | None:
        key = (grant.tenant, grant.server, grant.subject)
        current = self.grants.get(key)
        if (current.version if current else 0) != grant.version:
            return None
        stored = replace(grant, version=grant.version + 1, updated_at=time.time())
        self.grants[key] = stored
        return stored

    def delete_grant(self, tenant: str, server: str, subject: str) -> bool:
        return self.grants.pop((tenant, server, subject), None) is not None

    def list_grants(self, tenant: str, server: str | None = None) -> list[GrantSummary]:
        return [
            GrantSummary(g.tenant, g.server, g.subject, g.state, g.expires_at, g.scope, g.updated_at)
            for g in self.grants.values()
            if g.tenant == tenant and (server is None or g.server == server)
        ]

    def get_client(self, tenant: str, server: str, issuer: str) -> ClientRegistration | None:
        return self.clients.get((tenant, server, issuer))

    def put_client(self, client: ClientRegistration) -> None:
        self.clients[(client.tenant, client.server, client.issuer)] = client

    def put_pending(self, pending: PendingConsent) -> None:
        self.pending[pending.state] = pending

    def take_pending(self, state: str) -> PendingConsent | None:
        found = self.pending.pop(state, None)
        return found if found is not None and found.expires_at > time.time() else None
