"""TokenAuthority: issue and verify; one identical error for every failure; the cache bound; no leaks."""

from __future__ import annotations

import dataclasses
import logging
import threading
from pathlib import Path

import pytest

from foldgate.auth.authority import INVALID_TOKEN, TOUCH_SECONDS, TokenAuthority
from foldgate.errors import AuthError, ConflictError, InvalidRequestError, StoreError
from foldgate.model.agent_token import AgentToken, TokenHasher, new_token
from foldgate.store.tokens.base import TokenStore
from foldgate.store.tokens.sqlite import SqliteTokenStore

SECRET = b"unit-test-secret-0123456789abcdef"


class Clock:
    """A settable clock (epoch seconds)."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


class CountingStore(TokenStore):
    """Delegates to a real store and counts reads (to see cache hits)."""

    def __init__(self, inner: TokenStore) -> None:
        self.inner = inner
        self.gets = 0
        self.conflicts = 0
        self.touches: list[tuple[str, float]] = []

    def put(self, token: AgentToken, digest: str) -> None:
        if self.conflicts:
            self.conflicts -= 1
            raise ConflictError("taken")
        self.inner.put(token, digest)

    def get(self, token_id: str) -> tuple[AgentToken, str] | None:
        self.gets += 1
        return self.inner.get(token_id)

    def list(self, tenant: str | None = None) -> list[AgentToken]:
        return self.inner.list(tenant)

    def revoke(self, token_id: str) -> bool:
        return self.inner.revoke(token_id)

    def touch(self, token_id: str, at: float) -> None:
        self.touches.append((token_id, at))
        self.inner.touch(token_id, at)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(tmp_path: Path) -> CountingStore:
    return CountingStore(SqliteTokenStore(tmp_path / "t.sqlite3"))


def authority(store: TokenStore, clock: Clock, cache_seconds: float = 30.0) -> TokenAuthority:
    return TokenAuthority(store, TokenHasher(SECRET), cache_seconds=cache_seconds, clock=clock)


def rejected(auth: TokenAuthority, token: object) -> str:
    with pytest.raises(AuthError) as info:
        auth.verify(token)  # type: ignore[arg-type]
    assert info.value.code == "unauthorized"
    return str(info.value)


def test_issue_then_verify(store: CountingStore, clock: Clock) -> None:
    auth = authority(store, clock)
    token, grant = auth.issue("acme", servers=["time", "github"], tier="write", expires_in=60, label="ci")
    assert grant.servers == ("github", "time")
    assert grant.expires_at == clock.now + 60
    assert grant.created_at == clock.now
    assert grant.token_id == TokenHasher(SECRET).token_id(TokenHasher(SECRET).digest(token))
    assert auth.verify(token) == grant
    # Listed with the use the verification recorded (written beside the request).
    assert auth.uses.flush()
    assert auth.list("acme") == [dataclasses.replace(grant, last_used_at=clock.now)]
    assert auth.list("other") == []


def test_every_failure_gives_the_identical_message(store: CountingStore, clock: Clock) -> None:
    auth = authority(store, clock, cache_seconds=0)
    hasher = TokenHasher(SECRET)
    messages = [
        rejected(auth, t) for t in ("", "nope", "fgt_short", None, 42, new_token())
    ]  # malformed, unknown

    # Wrong digest: a stored grant under the right id whose digest is not the token's.
    forged = new_token()
    digest = hasher.digest(forged)
    store.put(AgentToken(hasher.token_id(digest), "acme", None, "read", None), "0" * 64)
    messages.append(rejected(auth, forged))

    expiring, _ = auth.issue("acme", expires_in=10)
    clock.now += 10
    messages.append(rejected(auth, expiring))

    revoked, grant = auth.issue("acme", expires_in=None)
    assert store.revoke(grant.token_id)
    messages.append(rejected(auth, revoked))

    wrong_key, _ = TokenAuthority(store, TokenHasher(b"another-secret-of-enough-length")).issue(
        "acme", expires_in=None
    )
    messages.append(rejected(auth, wrong_key))
    assert set(messages) == {INVALID_TOKEN}
    assert INVALID_TOKEN == "invalid, expired or revoked token"


def test_a_revocation_elsewhere_takes_effect_within_the_cache_bound(
    store: CountingStore, clock: Clock
) -> None:
    auth = authority(store, clock, cache_seconds=30)
    token, grant = auth.issue("acme", expires_in=None)
    auth.verify(token)
    assert store.gets == 1
    store.revoke(grant.token_id)  # another instance (or the CLI) revokes: this one's cache is untouched
    clock.now += 29.9
    assert auth.verify(token) == grant  # still cached: allowed by the documented bound
    assert store.gets == 1
    clock.now += 0.1
    rejected(auth, token)  # the bound is reached: re-read, refused
    assert store.gets == 2


def test_a_clock_going_backwards_does_not_extend_the_cache(store: CountingStore, clock: Clock) -> None:
    auth = authority(store, clock, cache_seconds=30)
    token, grant = auth.issue("acme", expires_in=None)
    auth.verify(token)
    store.revoke(grant.token_id)
    clock.now -= 5
    rejected(auth, token)


def test_expiry_is_checked_on_every_call_even_when_cached(store: CountingStore, clock: Clock) -> None:
    auth = authority(store, clock, cache_seconds=3600)
    token, _ = auth.issue("acme", expires_in=10)
    auth.verify(token)
    clock.now += 9.99
    auth.verify(token)
    assert store.gets == 1
    clock.now += 0.01
    rejected(auth, token)


def test_revoking_through_the_authority_is_immediate(store: CountingStore, clock: Clock) -> None:
    auth = authority(store, clock, cache_seconds=3600)
    token, grant = auth.issue("acme", expires_in=None)
    auth.verify(token)
    assert auth.revoke(grant.token_id)
    rejected(auth, token)
    assert auth.revoke(grant.token_id)  # idempotent: the token exists
    assert not auth.revoke("ffffffffffffffff")
    assert not auth.revoke("not an id")
    assert auth.list()[0].revoked


def test_the_cache_is_bounded(store: CountingStore, clock: Clock) -> None:
    auth = TokenAuthority(store, TokenHasher(SECRET), clock=clock, max_cached=2)
    tokens = [auth.issue("acme", expires_in=None)[0] for _ in range(5)]
    for token in tokens:
        auth.verify(token)
        assert len(auth._cache) <= 2


def test_issue_validates(store: CountingStore, clock: Clock) -> None:
    auth = authority(store, clock)
    for bad in (0, -1, float("nan"), float("inf"), True, "10"):
        with pytest.raises(InvalidRequestError, match="expires_in"):
            auth.issue("acme", expires_in=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="tier"):
        auth.issue("acme", tier="admin", expires_in=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequestError, match="tenant"):
        auth.issue("", expires_in=None)
    with pytest.raises(InvalidRequestError, match="servers"):
        auth.issue("acme", servers="github", expires_in=None)
    _, grant = auth.issue("acme", servers=iter(["b", "a"]), expires_in=None)
    assert grant.servers == ("a", "b")
    assert store.inner.list() == [grant]  # nothing stored for the rejected calls


def test_issue_retries_an_id_collision(store: CountingStore, clock: Clock) -> None:
    auth = authority(store, clock)
    store.conflicts = 2
    token, grant = auth.issue("acme", expires_in=None)
    assert auth.verify(token) == grant
    store.conflicts = 3
    with pytest.raises(ConflictError):
        auth.issue("acme", expires_in=None)


def test_a_store_outage_is_not_an_auth_failure(clock: Clock) -> None:
    class Broken(CountingStore):
        def get(self, token_id: str) -> tuple[AgentToken, str] | None:
            raise StoreError("down")

    auth = authority(Broken(SqliteTokenStore(":memory:")), clock)
    with pytest.raises(StoreError):
        auth.verify(new_token())


def test_tokens_and_digests_are_never_logged(
    store: CountingStore, clock: Clock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    auth = authority(store, clock, cache_seconds=0)
    token, grant = auth.issue("acme", expires_in=5)
    auth.verify(token)
    unknown = new_token()
    rejected(auth, unknown)
    auth.revoke(grant.token_id)
    rejected(auth, token)
    clock.now += 10
    rejected(auth, token)
    hasher = TokenHasher(SECRET)
    for secret in (
        token,
        hasher.digest(token),
        unknown,
        hasher.digest(unknown),
        hasher.token_id(hasher.digest(unknown)),
    ):
        assert secret not in caplog.text
    assert grant.token_id in caplog.text  # the public id is what operators see


def test_a_tokens_use_is_recorded_at_most_once_a_minute_per_instance(
    store: CountingStore, clock: Clock
) -> None:
    auth = authority(store, clock)
    token, grant = auth.issue("acme", expires_in=None)
    first = clock.now
    for _ in range(5):
        auth.verify(token)
        clock.now += 10
    assert auth.uses.flush()
    assert store.touches == [(grant.token_id, first)]
    clock.now = first + TOUCH_SECONDS
    auth.verify(token)
    assert auth.uses.flush()
    assert store.touches == [(grant.token_id, first), (grant.token_id, first + TOUCH_SECONDS)]
    assert [g.last_used_at for g in auth.list("acme")] == [first + TOUCH_SECONDS]
    # A refused token records nothing.
    rejected(auth, new_token())
    assert auth.uses.flush()
    assert len(store.touches) == 2


def test_a_failed_write_of_the_last_use_does_not_refuse_the_token(
    store: CountingStore, clock: Clock, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth = authority(store, clock)
    token, grant = auth.issue("acme", expires_in=None)

    def down(token_id: str, at: float) -> None:
        raise StoreError("dynamodb: ProvisionedThroughputExceededException")

    monkeypatch.setattr(store.inner, "touch", down)
    with caplog.at_level(logging.WARNING, logger="foldgate.auth.last_use"):
        assert auth.verify(token) == grant
        assert auth.uses.flush()
    assert "could not record the use of token" in caplog.text
    assert token not in caplog.text


def test_a_verification_never_waits_for_the_write_of_its_use(store: CountingStore, clock: Clock) -> None:
    auth = authority(store, clock)
    token, grant = auth.issue("acme", expires_in=None)
    release = threading.Event()
    started = threading.Event()
    inner_touch = store.inner.touch

    def slow(token_id: str, at: float) -> None:
        started.set()
        assert release.wait(10)
        inner_touch(token_id, at)

    store.inner.touch = slow  # type: ignore[method-assign]
    assert auth.verify(token) == grant  # returns while the write is held
    assert started.wait(10)
    assert not auth.uses.flush(timeout=0)
    assert store.inner.list("acme")[0].last_used_at is None
    release.set()
    assert auth.uses.flush()
    assert store.inner.list("acme")[0].last_used_at == clock.now
