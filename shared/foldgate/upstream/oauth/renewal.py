"""Register again when an authorization server has forgotten the client foldgate registered with it.

An authorization server forgets a dynamically registered client (RFC 7591) when it restarts with an
in-memory store, when an administrator deletes it, or when the client secret expires
(``client_secret_expires_at``). Its token endpoint then answers ``invalid_client`` (RFC 6749 section
5.2) and its authorization endpoint refuses the client_id: without a new registration the upstream
stays broken until an operator steps in.

* **Only foldgate's own DCR registration is renewed.** A pre-registered client comes from config and a
  CIMD client id is foldgate's own URL; neither is ever stored, and :func:`forget` acts only when the
  refused client_id is the stored one.
* **One instance registers.** :meth:`GrantStore.claim_client` is a conditional write keyed on the old
  client_id with a lease: its winner registers and stores the new client (another conditional write on
  the old client_id); the others wait a few seconds for that registration and use it. A claimer that
  dies is replaced once its lease lapses.
* **A cap.** At most one registration per ``every_s`` per (tenant, server, issuer), counted from the
  stored registration's ``registered_at``: an authorization server that keeps refusing cannot make
  foldgate register in a loop. Within that time the refusal is an UpstreamError saying when the next
  attempt may happen, and the forgotten client is marked (claimed) so no flow keeps using it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from foldgate.errors import UpstreamError
from foldgate.store.grants.base import ClientRegistration, GrantStore

__all__ = [
    "FORGOTTEN_REASON",
    "Register",
    "RenewalPolicy",
    "first_registration",
    "forget",
    "renew",
    "secret_expired",
    "self_registered",
    "usable",
]

log = logging.getLogger(__name__)

# What /api/v1/status says of a grant whose client the authorization server forgot.
FORGOTTEN_REASON: Final = (
    "the authorization server no longer knows foldgate's client registration (invalid_client); "
    "foldgate registers again: connect again"
)
_POLL_SECONDS: Final = 0.2

Register = Callable[[], Awaitable[ClientRegistration]]
"""``register()`` -> a new registration at the authorization server (one RFC 7591 request)."""


@dataclass(frozen=True, slots=True)
class RenewalPolicy:
    """How often foldgate may register again, and how long instances wait for each other."""

    every_s: float = 300.0  # the cap: at most one registration per server per this many seconds
    claim_s: float = 60.0  # the claim's lease: longer than any registration request takes
    wait_s: float = 5.0  # how long a losing instance waits for the winner's registration


def self_registered(client: ClientRegistration) -> bool:
    """Whether foldgate registered ``client`` itself (RFC 7591): only then does it keep the server's
    answer; a pre-registered or CIMD client has none, and is never renewed."""
    return bool(client.registration)


def secret_expired(client: ClientRegistration, now: float) -> bool:
    """Whether the registration's ``client_secret_expires_at`` has passed (RFC 7591 3.2.1: 0 = never)."""
    value = client.registration.get("client_secret_expires_at")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return 0 < value <= now


def usable(client: ClientRegistration, redirect_uri: str, now: float) -> bool:
    """Whether a stored registration can start a flow now: unclaimed, for this redirect, not expired."""
    return (
        client.claimed_at is None and redirect_uri in client.redirect_uris and not secret_expired(client, now)
    )


async def first_registration(store: GrantStore, register: Register) -> ClientRegistration:
    """Register where none is stored; of instances racing, the first stored wins and the rest use it."""
    fresh = await register()
    if store.replace_client(fresh, previous=None):
        return fresh
    winner = store.get_client(fresh.tenant, fresh.server, fresh.issuer)
    return winner if winner is not None else fresh


async def _winners(
    store: GrantStore, stale: ClientRegistration, register: Register, wait_s: float
) -> ClientRegistration:
    """The registration another instance is making in place of ``stale`` (polled for ``wait_s``)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        await asyncio.sleep(_POLL_SECONDS)
        current = store.get_client(stale.tenant, stale.server, stale.issuer)
        if current is None:
            return await first_registration(store, register)
        if current.client_id != stale.client_id:
            return current
    raise UpstreamError(
        f"{stale.server}: another foldgate instance is registering with the authorization server "
        "again; retry in a few seconds"
    )


async def renew(
    store: GrantStore,
    stale: ClientRegistration,
    register: Register,
    policy: RenewalPolicy,
    *,
    capped: bool = True,
    clock: Callable[[], float] = time.time,
) -> ClientRegistration:
    """A registration to use instead of the stored ``stale`` one (forgotten, expired or for another
    redirect URI). ``capped=False`` skips the cap (a changed redirect URI is the operator's doing)."""
    current = store.get_client(stale.tenant, stale.server, stale.issuer)
    if current is None:
        return await first_registration(store, register)
    if current.client_id != stale.client_id:
        return current  # another instance registered again already
    now = clock()
    next_at = current.registered_at + policy.every_s
    if capped and now < next_at:
        if current.claimed_at is None:
            store.claim_client(current, lease_s=policy.claim_s)  # no flow may use it meanwhile
        raise UpstreamError(
            f"{stale.server}: the authorization server refused foldgate's client registration again; "
            f"foldgate registers at most once per {policy.every_s:.0f} s and will retry after "
            f"{time.strftime('%H:%M:%S', time.gmtime(next_at))} UTC"
        )
    if not store.claim_client(current, lease_s=policy.claim_s):
        return await _winners(store, stale, register, policy.wait_s)
    fresh = await register()  # on failure the claim lapses after its lease and another may try
    if store.replace_client(fresh, previous=stale.client_id):
        log.info("%s/%s: registered again with the authorization server", stale.tenant, stale.server)
        return fresh
    winner = store.get_client(stale.tenant, stale.server, stale.issuer)
    return winner if winner is not None else fresh


async def forget(
    store: GrantStore, refused: ClientRegistration, register: Register, policy: RenewalPolicy
) -> ClientRegistration | None:
    """The token endpoint answered ``invalid_client`` for ``refused``: register again when it is the
    DCR registration foldgate stored (the new one), else None (a pre-registered or CIMD client is never
    dropped, and a client another instance already replaced needs nothing)."""
    stored = store.get_client(refused.tenant, refused.server, refused.issuer)
    if stored is None or stored.client_id != refused.client_id:
        return None
    log.warning(
        "%s/%s: the authorization server refused foldgate's registered client (invalid_client)",
        refused.tenant,
        refused.server,
    )
    return await renew(store, stored, register, policy)
