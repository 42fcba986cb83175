"""The GrantStore contract, run over every backend: round trips, the conditional write two instances
race on, disconnect, token-free summaries, client registrations (and the conditional writes that
re-register a forgotten one) and single-use, expiring consents."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

import pytest

from foldgate.errors import ConflictError, StoreError
from foldgate.store.grants.base import (
    SHARED,
    ClientRegistration,
    GrantCipher,
    GrantStore,
    PendingConsent,
    UpstreamGrant,
)
from foldgate.store.grants.cipher import LocalKeyCipher
from foldgate.store.grants.dynamodb import DynamoGrantStore
from foldgate.store.grants.kms import KmsEnvelopeCipher
from foldgate.store.grants.sqlite import SqliteGrantStore


class Clock:
    """A settable clock, so expiry is tested without sleeping."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


MakeStore = Callable[[], GrantStore]


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(params=["sqlite", "dynamodb"])
def make_store(request: pytest.FixtureRequest, tmp_path: Path, clock: Clock) -> Iterator[MakeStore]:
    """Opens stores on one database (or table) with one key: each call is another instance (locally
    the key file's AES key, in the cloud each with its own KMS envelope cipher and data-key cache)."""
    opened: list[GrantStore] = []
    if request.param == "sqlite":
        local = LocalKeyCipher([os.urandom(32)])

        def make() -> GrantStore:
            opened.append(SqliteGrantStore(tmp_path / "g.sqlite3", local, clock=clock))
            return opened[-1]
    else:
        table, key = request.getfixturevalue("dynamo_table"), request.getfixturevalue("kms_key")

        def make() -> GrantStore:
            cipher: GrantCipher = KmsEnvelopeCipher(key)
            opened.append(DynamoGrantStore(table, cipher, clock=clock))
            return opened[-1]

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: MakeStore) -> GrantStore:
    return make_store()


def grant(subject: str = SHARED, **kw: object) -> UpstreamGrant:
    fields: dict[str, object] = {
        "access_token": "at-1",
        "refresh_token": "rt-1",
        "expires_at": 1_003_600.5,
        "scope": "repo read:user",
        "issuer": "https://auth.example.com",
        "resource": "https://mcp.example.com/mcp",
    }
    fields.update(kw)
    return UpstreamGrant("acme", "github", subject, **fields)  # type: ignore[arg-type]


def test_round_trip_of_every_field_and_of_the_bare_minimum(store: GrantStore, clock: Clock) -> None:
    full = grant("user-✓", token_type="DPoP", state="expired")
    stored = store.put_grant(full)
    assert stored == replace(full, version=1, updated_at=clock.now)
    assert store.get_grant("acme", "github", "user-✓") == stored
    bare = UpstreamGrant("acme", "time", SHARED, access_token="x")
    assert store.put_grant(bare) == replace(bare, version=1, updated_at=clock.now)
    assert store.get_grant("acme", "time", SHARED) == replace(bare, version=1, updated_at=clock.now)
    assert store.get_grant("acme", "github", SHARED) is None
    assert store.get_grant("other", "github", "user-✓") is None


def test_a_first_put_never_overwrites_and_a_stale_version_never_writes(store: GrantStore) -> None:
    first = store.put_grant(grant())
    assert first is not None
    assert store.put_grant(grant(access_token="at-other")) is None  # version 0 but a grant exists
    assert store.put_grant(replace(first, access_token="at-2", version=5)) is None
    assert store.get_grant("acme", "github", SHARED) == first
    second = store.put_grant(replace(first, access_token="at-2"))
    assert second is not None
    assert second.version == 2
    assert store.get_grant("acme", "github", SHARED) == second


def test_two_instances_refreshing_at_once_keep_the_winners_rotated_token(
    make_store: MakeStore, clock: Clock
) -> None:
    one, two = make_store(), make_store()
    stored = one.put_grant(grant())
    assert stored is not None
    # Both instances read version 1 and refresh; the authorization server rotates the refresh token
    # for the first request and would refuse rt-1 from then on.
    seen_one = one.get_grant("acme", "github", SHARED)
    seen_two = two.get_grant("acme", "github", SHARED)
    assert seen_one == seen_two == stored
    assert seen_one is not None
    assert seen_two is not None
    clock.now += 10
    winner = one.put_grant(replace(seen_one, access_token="at-A", refresh_token="rt-A"))
    loser = two.put_grant(replace(seen_two, access_token="at-B", refresh_token="rt-B"))
    assert winner is not None
    assert winner.version == 2
    assert loser is None
    reread = two.get_grant("acme", "github", SHARED)
    assert reread == winner
    assert reread is not None
    assert reread.refresh_token == "rt-A"


def test_a_refresh_racing_a_disconnect_does_not_bring_the_grant_back(make_store: MakeStore) -> None:
    one, two = make_store(), make_store()
    stored = one.put_grant(grant())
    assert stored is not None
    assert two.delete_grant("acme", "github", SHARED)
    assert one.put_grant(replace(stored, access_token="at-2", refresh_token="rt-2")) is None
    assert one.get_grant("acme", "github", SHARED) is None


def test_of_many_concurrent_writers_of_one_version_exactly_one_wins(make_store: MakeStore) -> None:
    stored = make_store().put_grant(grant())
    assert stored is not None
    stores = [make_store() for _ in range(6)]
    with ThreadPoolExecutor(len(stores)) as pool:
        results = list(
            pool.map(
                lambda i: stores[i].put_grant(replace(stored, refresh_token=f"rt-{i}")), range(len(stores))
            )
        )
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert winners[0].version == 2
    assert stores[0].get_grant("acme", "github", SHARED) == winners[0]


def test_an_unknown_state_is_refused_at_write(store: GrantStore) -> None:
    with pytest.raises(StoreError, match="unknown state"):
        store.put_grant(grant(state="root"))
    assert store.get_grant("acme", "github", SHARED) is None


def test_delete_is_disconnect(store: GrantStore) -> None:
    store.put_grant(grant())
    assert store.delete_grant("acme", "github", SHARED)
    assert store.get_grant("acme", "github", SHARED) is None
    assert not store.delete_grant("acme", "github", SHARED)
    # Reconnecting starts again from version 0.
    again = store.put_grant(grant(access_token="at-new"))
    assert again is not None
    assert again.version == 1


def test_summaries_carry_state_and_expiry_never_a_token(store: GrantStore, clock: Clock) -> None:
    store.put_grant(grant())
    store.put_grant(grant("bob", state="needs_consent", expires_at=None, scope=None))
    store.put_grant(UpstreamGrant("acme", "linear", "bob", access_token="at-linear"))
    store.put_grant(UpstreamGrant("other", "github", SHARED, access_token="at-other"))
    summaries = store.list_grants("acme")
    assert [(s.server, s.subject, s.state) for s in summaries] == [
        ("github", SHARED, "connected"),
        ("github", "bob", "needs_consent"),
        ("linear", "bob", "connected"),
    ]
    assert summaries[0].expires_at == 1_003_600.5
    assert summaries[0].scope == "repo read:user"
    assert summaries[0].updated_at == clock.now
    assert summaries[1].expires_at is None
    assert [s.subject for s in store.list_grants("acme", "linear")] == ["bob"]
    assert store.list_grants("nobody") == []
    for summary in summaries:
        assert not any(t in repr(summary) for t in ("at-1", "rt-1", "at-linear"))


def test_client_registrations_round_trip_and_overwrite(store: GrantStore) -> None:
    client = ClientRegistration(
        "acme", "github", "https://auth.example.com", "client-1", client_secret="s3cret",
        token_endpoint_auth_method="client_secret_basic", redirect_uris=("https://gw.example.com/oauth/callback",),
        registration={"client_id": "client-1", "registration_access_token": "rat", "n": [1, 2.5, None]},
    )  # fmt: skip
    store.put_client(client)
    assert store.get_client("acme", "github", "https://auth.example.com") == client
    assert store.get_client("acme", "github", "https://other.example.com") is None
    assert store.get_client("acme", "linear", "https://auth.example.com") is None
    public = ClientRegistration("acme", "github", "https://auth.example.com", "client-2")
    store.put_client(public)
    assert store.get_client("acme", "github", "https://auth.example.com") == public


def test_a_reason_and_the_client_of_a_grant_round_trip_and_the_reason_is_listed(store: GrantStore) -> None:
    why = "the authorization server no longer knows foldgate's client registration"
    stored = store.put_grant(grant(state="needs_consent", reason=why, client_id="client-1"))
    assert stored is not None
    held = store.get_grant("acme", "github", SHARED)
    assert held is not None
    assert (held.reason, held.client_id) == (why, "client-1")
    assert [s.reason for s in store.list_grants("acme")] == [why]
    cleared = store.put_grant(replace(held, state="connected", reason=None))
    assert cleared is not None
    assert [s.reason for s in store.list_grants("acme")] == [None]


def test_a_tokens_issue_time_and_a_pending_step_up_round_trip_sealed(store: GrantStore) -> None:
    """The refresh margin needs when the token was issued; a pending step-up (the scope the next consent
    asks for) lives on a connected grant until that consent."""
    stored = store.put_grant(grant(issued_at=1_000_000.25, step_up="repo read:user admin:org"))
    assert stored is not None
    held = store.get_grant("acme", "github", SHARED)
    assert held is not None
    assert (held.state, held.issued_at, held.step_up) == (
        "connected",
        1_000_000.25,
        "repo read:user admin:org",
    )
    assert held.consent_scope() == "repo read:user admin:org"
    done = store.put_grant(replace(held, step_up=None))
    assert done is not None
    again = store.get_grant("acme", "github", SHARED)
    assert again is not None
    assert (again.step_up, again.consent_scope()) == (None, None)


def registered(client_id: str, at: float = 5.0) -> ClientRegistration:
    return ClientRegistration("acme", "github", "https://auth.example.com", client_id, client_secret="s3cret",
                              redirect_uris=("https://gw.example.com/oauth/callback",), registered_at=at,
                              registration={"client_id": client_id})  # fmt: skip


def test_a_first_registration_never_overwrites_and_a_replacement_needs_the_old_client_id(
    make_store: MakeStore,
) -> None:
    one, two = make_store(), make_store()
    assert one.replace_client(registered("client-1"), previous=None)
    assert not two.replace_client(registered("client-x"), previous=None)  # the first stored wins
    assert not two.replace_client(registered("client-x"), previous="client-0")  # not the stored one
    assert two.replace_client(registered("client-2", at=9.0), previous="client-1")
    assert not one.replace_client(registered("client-3"), previous="client-1")  # the loser re-reads
    assert one.get_client("acme", "github", "https://auth.example.com") == registered("client-2", at=9.0)


def test_of_many_instances_claiming_a_forgotten_client_exactly_one_wins(
    make_store: MakeStore, clock: Clock
) -> None:
    stores = [make_store() for _ in range(6)]
    assert stores[0].replace_client(registered("client-1"), previous=None)
    old = stores[0].get_client("acme", "github", "https://auth.example.com")
    assert old is not None
    with ThreadPoolExecutor(6) as pool:
        won = list(pool.map(lambda s: s.claim_client(old, lease_s=60.0), stores))
    assert won.count(True) == 1
    claimed = stores[1].get_client("acme", "github", "https://auth.example.com")
    assert claimed is not None
    assert claimed.claimed_at == clock.now
    assert replace(claimed, claimed_at=None) == old  # the registration itself is unchanged
    clock.now += 61.0
    assert stores[2].claim_client(old, lease_s=60.0)  # a lapsed claim (its claimer died) is taken over
    assert stores[3].replace_client(registered("client-2"), previous="client-1")
    fresh = stores[4].get_client("acme", "github", "https://auth.example.com")
    assert fresh is not None
    assert fresh.claimed_at is None  # the new registration starts unclaimed
    assert not stores[5].claim_client(old, lease_s=60.0)  # the old client is no longer stored


def consent(state: str = "st-1", expires_at: float = 1_000_600.0) -> PendingConsent:
    return PendingConsent(
        state=state, tenant="acme", server="github", subject="bob", code_verifier="v" * 64,
        redirect_uri="https://gw.example.com/oauth/callback", issuer="https://auth.example.com",
        resource="https://mcp.example.com/mcp", scope="repo", expires_at=expires_at, return_to="/console",
    )  # fmt: skip


def test_a_pending_consent_is_taken_once(make_store: MakeStore) -> None:
    one, two = make_store(), make_store()
    one.put_pending(consent())
    assert two.take_pending("st-1") == consent()
    assert one.take_pending("st-1") is None
    assert two.take_pending("st-1") is None
    assert one.take_pending("never-issued") is None


def test_an_expired_pending_consent_is_refused_and_gone(store: GrantStore, clock: Clock) -> None:
    store.put_pending(consent("st-old", expires_at=clock.now + 60))
    store.put_pending(consent("st-live", expires_at=clock.now + 600))
    clock.now += 61
    assert store.take_pending("st-old") is None
    assert store.take_pending("st-live") == consent("st-live", expires_at=1_000_600.0)


def test_a_state_cannot_be_issued_twice(store: GrantStore) -> None:
    store.put_pending(consent())
    with pytest.raises(ConflictError):
        store.put_pending(replace(consent(), subject="mallory"))
    assert store.take_pending("st-1") == consent()


def test_a_browser_bound_sign_in_round_trips_with_its_purpose_nonce_and_binding(store: GrantStore) -> None:
    login = replace(consent("st-login"), browser="b" * 64, purpose="login", nonce="n-1")
    store.put_pending(login)
    taken = store.take_pending("st-login")
    assert taken == login
    assert taken is not None
    assert (taken.browser, taken.purpose, taken.nonce) == ("b" * 64, "login", "n-1")
    store.put_pending(consent("st-plain"))
    plain = store.take_pending("st-plain")
    assert plain is not None
    assert (plain.browser, plain.purpose, plain.nonce) == (None, "consent", None)


def test_a_connect_link_is_used_once_across_instances(make_store: MakeStore) -> None:
    one, two = make_store(), make_store()
    assert not two.link_used("nonce-1")
    assert one.use_link("nonce-1", 1_000_600.0) is True
    assert two.link_used("nonce-1")
    assert not two.link_used("nonce-2")
    assert two.use_link("nonce-1", 1_000_600.0) is False
    assert one.use_link("nonce-1", 1_000_600.0) is False
    assert two.use_link("nonce-2", 1_000_600.0) is True  # another link is its own


def test_of_many_instances_opening_one_link_at_once_exactly_one_uses_it(make_store: MakeStore) -> None:
    stores = [make_store() for _ in range(6)]
    with ThreadPoolExecutor(len(stores)) as pool:
        wins = list(pool.map(lambda s: s.use_link("raced", 1_000_600.0), stores))
    assert wins.count(True) == 1


def test_a_used_link_is_remembered_until_its_expiry(store: GrantStore, clock: Clock) -> None:
    assert store.use_link("short", clock.now + 60)
    clock.now += 59
    assert not store.use_link("short", clock.now + 60)


def test_a_tenant_key_is_stored_once_sealed_and_read_back_by_every_instance(make_store: MakeStore) -> None:
    first, second = make_store(), make_store()
    assert first.get_key("acme", "dpop") is None
    assert first.add_key("acme", "dpop", "-----BEGIN PRIVATE KEY-----\nfirst\n")
    assert not second.add_key("acme", "dpop", "-----BEGIN PRIVATE KEY-----\nsecond\n")  # never overwritten
    assert second.get_key("acme", "dpop") == "-----BEGIN PRIVATE KEY-----\nfirst\n"
    assert second.get_key("other", "dpop") is None  # per tenant
    assert second.list_grants("acme") == []  # a key is not a grant


def test_of_many_instances_making_the_first_key_at_once_exactly_one_stores_it(make_store: MakeStore) -> None:
    stores = [make_store() for _ in range(6)]
    with ThreadPoolExecutor(len(stores)) as pool:
        won = list(pool.map(lambda i: stores[i].add_key("acme", "dpop", f"pem-{i}"), range(len(stores))))
    assert won.count(True) == 1
    assert {s.get_key("acme", "dpop") for s in stores} == {f"pem-{won.index(True)}"}
