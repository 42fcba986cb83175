"""The TokenStore contract, run over SQLite and DynamoDB (moto_server) alike, plus the authority on each."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.auth.authority import INVALID_TOKEN, TokenAuthority
from foldgate.errors import AuthError, ConflictError
from foldgate.model.agent_token import AgentToken, TokenHasher
from foldgate.store.tokens.base import TokenStore
from foldgate.store.tokens.dynamodb import DynamoTokenStore
from foldgate.store.tokens.sqlite import SqliteTokenStore
from tests.integration.store.backends import BACKENDS, open_backend


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TokenStore]:
    yield from open_backend(request, tmp_path, SqliteTokenStore, DynamoTokenStore)


def grant(token_id: str, tenant: str = "acme", created_at: float = 1000.0, **kw: object) -> AgentToken:
    fields: dict[str, object] = {"servers": None, "tier": "read", "expires_at": None}
    fields.update(kw)
    return AgentToken(token_id=token_id, tenant=tenant, created_at=created_at, **fields)  # type: ignore[arg-type]


def test_round_trip_of_every_field(store: TokenStore) -> None:
    full = grant("00000000000000a1", servers=("github", "time"), tier="destructive", expires_at=1234.5678,
                 label="ci bot ✓", created_at=1000.25)  # fmt: skip
    bare = grant("00000000000000a2")
    store.put(full, "d1" * 32)
    store.put(bare, "d2" * 32)
    assert store.get(full.token_id) == (full, "d1" * 32)
    assert store.get(bare.token_id) == (bare, "d2" * 32)
    assert store.get("00000000000000ff") is None


def test_put_never_overwrites(store: TokenStore) -> None:
    store.put(grant("00000000000000b1"), "a" * 64)
    with pytest.raises(ConflictError):
        store.put(grant("00000000000000b1", tenant="evil", tier="destructive"), "b" * 64)
    assert store.get("00000000000000b1") == (grant("00000000000000b1"), "a" * 64)


def test_list_all_or_by_tenant_oldest_first(store: TokenStore) -> None:
    tokens = [
        grant("00000000000000c3", "acme", 3.0),
        grant("00000000000000c1", "acme", 1.0),
        grant("00000000000000c2", "other", 2.0),
    ]
    for t in tokens:
        store.put(t, "e" * 64)
    assert [t.token_id for t in store.list()] == ["00000000000000c1", "00000000000000c2", "00000000000000c3"]
    assert [t.token_id for t in store.list("acme")] == ["00000000000000c1", "00000000000000c3"]
    assert store.list("nobody") == []


def test_revoke(store: TokenStore) -> None:
    store.put(grant("00000000000000d1"), "f" * 64)
    assert store.revoke("00000000000000d1")
    assert store.revoke("00000000000000d1")  # idempotent
    found = store.get("00000000000000d1")
    assert found is not None
    assert found[0].revoked
    assert found[1] == "f" * 64
    assert [t.revoked for t in store.list()] == [True]
    assert not store.revoke("00000000000000d2")
    assert store.get("00000000000000d2") is None  # no stub created for an unknown id
    assert store.list() == [found[0]]


def test_authority_end_to_end(store: TokenStore) -> None:
    auth = TokenAuthority(store, TokenHasher(b"integration-secret-0123456789"), cache_seconds=0)
    token, issued = auth.issue("acme", servers=["github"], tier="write", expires_in=3600, label="x")
    assert auth.verify(token) == issued
    assert auth.uses.flush()
    assert [t.token_id for t in auth.list("acme")] == [issued.token_id]
    assert auth.list("acme")[0].last_used_at is not None
    assert auth.revoke(issued.token_id)
    with pytest.raises(AuthError) as info:
        auth.verify(token)
    assert info.value.message == INVALID_TOKEN


def test_touch_keeps_the_latest_use_and_creates_nothing_for_an_unknown_id(store: TokenStore) -> None:
    store.put(grant("00000000000000e1"), "a" * 64)
    assert store.list()[0].last_used_at is None
    store.touch("00000000000000e1", 2000.5)
    store.touch("00000000000000e1", 1500.0)  # an instance with an older use loses
    found = store.get("00000000000000e1")
    assert found is not None
    assert found[0].last_used_at == 2000.5
    assert [t.last_used_at for t in store.list("acme")] == [2000.5]
    store.touch("00000000000000e1", 2100.0)
    assert [t.last_used_at for t in store.list()] == [2100.0]
    store.touch("00000000000000e2", 2000.0)
    assert store.get("00000000000000e2") is None


def test_a_sqlite_token_table_made_before_last_use_existed_gets_the_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE tokens (token_id TEXT PRIMARY KEY, digest TEXT NOT NULL, tenant TEXT NOT NULL, "
        "servers TEXT, tier TEXT NOT NULL, expires_at REAL, label TEXT, created_at REAL NOT NULL, "
        "revoked INTEGER NOT NULL DEFAULT 0, revoked_at REAL)"
    )
    old.execute(
        "INSERT INTO tokens (token_id, digest, tenant, tier, created_at) "
        "VALUES ('00000000000000f1', 'd', 'acme', 'read', 1.0)"
    )
    old.commit()
    old.close()
    store = SqliteTokenStore(path)
    assert [t.last_used_at for t in store.list()] == [None]
    store.touch("00000000000000f1", 5.0)
    assert [t.last_used_at for t in store.list()] == [5.0]
    store.close()
