"""Registering again after an authorization server forgot foldgate's DCR client: only that client is
ever replaced, one instance registers while the others use its registration, the cap holds, an
expired client secret counts as forgotten, and a claimer that died is replaced once its claim lapses.

The authorization server's registration endpoint is played by ``Registrar`` (it counts registrations
and hands out new client ids); the store is the real SQLite grant store.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mcp.shared.auth import OAuthMetadata

from foldgate.config.upstream_auth import OAuthAuth
from foldgate.errors import ConfigError, UpstreamError
from foldgate.store.grants.base import ClientRegistration
from foldgate.store.grants.cipher import LocalKeyCipher
from foldgate.store.grants.sqlite import SqliteGrantStore
from foldgate.upstream.oauth import registration
from foldgate.upstream.oauth.discovery import Discovered
from foldgate.upstream.oauth.renewal import RenewalPolicy, forget, renew, secret_expired, usable

ISSUER = "https://as.example.com"
REDIRECT = "https://gw.example.com/oauth/callback"
POLICY = RenewalPolicy(every_s=300.0, claim_s=60.0, wait_s=3.0)


class Clock:
    """The store's clock (claims are stamped with it), settable."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


class Registrar:
    """The authorization server's registration endpoint: each call is a new client id."""

    def __init__(self, delay: float = 0.0) -> None:
        self.count = 0
        self.delay = delay

    async def __call__(self) -> ClientRegistration:
        self.count += 1
        await asyncio.sleep(self.delay)
        return dcr(f"dcr-{self.count + 1}", registered_at=time.time())


def dcr(client_id: str, **kw: Any) -> ClientRegistration:
    fields: dict[str, Any] = {"redirect_uris": (REDIRECT,), "registration": {"client_id": client_id}}
    fields.update(kw)
    return ClientRegistration("t", "s", ISSUER, client_id, **fields)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def stores(tmp_path: Path, clock: Clock) -> Iterator[tuple[SqliteGrantStore, SqliteGrantStore]]:
    """Two instances on one file (one key), as two warm Lambda instances share a table."""
    cipher = LocalKeyCipher.from_file(tmp_path / "g.key")
    pair = (
        SqliteGrantStore(tmp_path / "g.sqlite3", cipher, clock=clock),
        SqliteGrantStore(tmp_path / "g.sqlite3", cipher, clock=clock),
    )
    yield pair
    for store in pair:
        store.close()


@pytest.fixture
def store(stores: tuple[SqliteGrantStore, SqliteGrantStore]) -> SqliteGrantStore:
    return stores[0]


def stored(store: SqliteGrantStore, old: float = 3600.0) -> ClientRegistration:
    """The first registration, ``old`` seconds ago, as the store holds it."""
    assert store.replace_client(dcr("dcr-1", registered_at=time.time() - old), previous=None)
    held = store.get_client("t", "s", ISSUER)
    assert held is not None
    return held


async def test_invalid_client_for_the_stored_registration_registers_a_new_one(
    store: SqliteGrantStore,
) -> None:
    old = stored(store)
    registrar = Registrar()
    renewed = await forget(store, old, registrar, POLICY)
    assert renewed is not None
    assert registrar.count == 1
    assert renewed.client_id == "dcr-2"
    held = store.get_client("t", "s", ISSUER)
    assert held is not None
    assert held.client_id == "dcr-2"
    assert held.claimed_at is None
    assert usable(held, REDIRECT, time.time())


async def test_a_client_that_is_not_the_stored_one_is_never_dropped(store: SqliteGrantStore) -> None:
    old = stored(store)
    registrar = Registrar()
    # A pre-registered (or CIMD) client the server refused: its id is not the stored registration's.
    preregistered = ClientRegistration("t", "s", ISSUER, "configured-by-the-operator")
    assert await forget(store, preregistered, registrar, POLICY) is None
    assert registrar.count == 0
    assert store.get_client("t", "s", ISSUER) == old


async def test_of_two_instances_noticing_at_once_one_registers_and_both_use_it(
    stores: tuple[SqliteGrantStore, SqliteGrantStore],
) -> None:
    first, second = stores
    old = stored(first)
    registrar = Registrar(delay=0.5)  # a slow registration: the other instance arrives meanwhile
    a, b = await asyncio.gather(forget(first, old, registrar, POLICY), forget(second, old, registrar, POLICY))
    assert registrar.count == 1
    assert a is not None
    assert b is not None
    assert a.client_id == b.client_id == "dcr-2"


async def test_the_cap_refuses_a_second_registration_soon_after_the_last(store: SqliteGrantStore) -> None:
    old = stored(store, old=10.0)  # registered ten seconds ago
    registrar = Registrar()
    with pytest.raises(UpstreamError, match="at most once per 300 s"):
        await forget(store, old, registrar, POLICY)
    assert registrar.count == 0
    held = store.get_client("t", "s", ISSUER)
    assert held is not None
    assert not usable(held, REDIRECT, time.time())  # marked: no flow sends people to it meanwhile
    with pytest.raises(UpstreamError, match="at most once"):  # still capped, still no registration
        await renew(store, held, registrar, POLICY)
    assert registrar.count == 0


async def test_after_the_cap_and_the_lapsed_claim_it_registers(store: SqliteGrantStore, clock: Clock) -> None:
    old = stored(store, old=10.0)
    registrar = Registrar()
    with pytest.raises(UpstreamError):
        await forget(store, old, registrar, POLICY)
    clock.now += POLICY.claim_s + 1  # the marking claim lapses
    later = time.time() + POLICY.every_s  # and the cap has passed
    renewed = await renew(store, old, registrar, POLICY, clock=lambda: later)
    assert (registrar.count, renewed.client_id) == (1, "dcr-2")


async def test_a_claimer_that_died_is_replaced_when_its_claim_lapses(
    store: SqliteGrantStore, clock: Clock
) -> None:
    old = stored(store)
    assert store.claim_client(old, lease_s=POLICY.claim_s)  # an instance claimed, then died
    registrar = Registrar()
    quick = replace(POLICY, wait_s=0.5)
    with pytest.raises(UpstreamError, match="another foldgate instance"):
        await renew(store, old, registrar, quick)  # waits for a registration that never comes
    assert registrar.count == 0
    clock.now += POLICY.claim_s + 1
    renewed = await renew(store, old, registrar, quick)
    assert (registrar.count, renewed.client_id) == (1, "dcr-2")


@pytest.mark.parametrize(
    ("expires_at", "expired"),
    [(0, False), (1.0, True), (time.time() + 3600, False), (True, False), ("1", False), (None, False)],
    # Named, not derived from the values: an id made of time.time() differs between xdist workers.
    ids=["unset-zero", "past", "in-an-hour", "bool", "string", "none"],
)
def test_the_client_secret_expiry_counts_only_when_set_and_passed(expires_at: object, expired: bool) -> None:
    client = dcr("dcr-1", registration={"client_secret_expires_at": expires_at})
    assert secret_expired(client, time.time()) is expired


def found() -> Discovered:
    metadata = OAuthMetadata.model_validate({
        "issuer": ISSUER, "authorization_endpoint": ISSUER + "/authorize",
        "token_endpoint": ISSUER + "/token", "registration_endpoint": ISSUER + "/register",
    })  # fmt: skip
    return Discovered("https://mcp.example.com/mcp", ISSUER, metadata, None)


async def no_secret(name: str) -> str:
    raise ConfigError(f"no secret {name}")


async def choose(store: SqliteGrantStore, redirect: str = REDIRECT) -> ClientRegistration:
    return await registration.client_for(
        store, OAuthAuth(), found(), tenant="t", server="s", redirect_uri=redirect,
        public_url="https://gw.example.com", read_secret=no_secret, allow_private=False, renewal=POLICY,
    )  # fmt: skip


async def test_a_stored_client_whose_secret_expired_is_registered_again(
    store: SqliteGrantStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    registrar = Registrar()

    async def register(*args: Any, **kwargs: Any) -> ClientRegistration:
        return await registrar()

    monkeypatch.setattr(registration, "register", register)
    assert store.replace_client(
        dcr("dcr-1", registered_at=time.time() - 3600, registration={"client_secret_expires_at": 1}),
        previous=None,
    )
    assert (await choose(store)).client_id == "dcr-2"
    assert (await choose(store)).client_id == "dcr-2"  # the new one is kept and reused
    assert registrar.count == 1


async def test_a_new_redirect_uri_registers_again_without_the_cap(
    store: SqliteGrantStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    registrar = Registrar()

    async def register(*args: Any, **kwargs: Any) -> ClientRegistration:
        return replace(await registrar(), redirect_uris=(kwargs["redirect_uri"],))

    monkeypatch.setattr(registration, "register", register)
    stored(store, old=1.0)  # just registered: the cap would refuse a forgotten client now
    moved = "https://new.example.com/oauth/callback"
    chosen = await choose(store, moved)
    assert (chosen.client_id, chosen.redirect_uris, registrar.count) == ("dcr-2", (moved,), 1)
