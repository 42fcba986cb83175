"""SqliteGrantStore at rest: no secret in the file in clear, rows bound to their key, tampering refused,
listing without decrypting; and how the wiring picks the key file."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from foldgate.app.wiring import open_grant_cipher, open_grant_store
from foldgate.config.settings import Settings
from foldgate.errors import ConfigError, StoreError
from foldgate.store.grants.base import SHARED, ClientRegistration, GrantCipher, PendingConsent, UpstreamGrant
from foldgate.store.grants.cipher import LocalKeyCipher
from foldgate.store.grants.sqlite import SqliteGrantStore

ACCESS = "gho_ACCESS_TOKEN_0123456789abcdef"
REFRESH = "ghr_REFRESH_TOKEN_0123456789abcdef"
CLIENT_SECRET = "CLIENT_SECRET_0123456789abcdef"
VERIFIER = "PKCE_VERIFIER_0123456789abcdef0123456789abcdef"


def grant(subject: str = SHARED, server: str = "github") -> UpstreamGrant:
    return UpstreamGrant(
        "acme", server, subject, access_token=ACCESS, refresh_token=REFRESH, expires_at=2e9, scope="repo"
    )


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "g.sqlite3"


@pytest.fixture
def store(db: Path) -> SqliteGrantStore:
    return SqliteGrantStore(db, LocalKeyCipher([os.urandom(32)]))


def test_no_secret_is_in_the_database_files_in_clear(store: SqliteGrantStore, db: Path) -> None:
    store.put_grant(grant())
    store.put_client(
        ClientRegistration("acme", "github", "https://a.example", "cid", client_secret=CLIENT_SECRET)
    )
    store.put_pending(PendingConsent("st", "acme", "github", "bob", VERIFIER, "https://gw/cb", "https://a.example",
                                     None, None, expires_at=4e9))  # fmt: skip
    store.close()
    # The WAL holds recent writes before a checkpoint: read every file SQLite keeps.
    raw = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))
    assert b"repo" in raw  # the clear columns are there (the check can see text) ...
    for secret in (ACCESS, REFRESH, CLIENT_SECRET, VERIFIER):
        assert secret.encode() not in raw  # ... the secrets are not
    # The pending consent is addressed by a digest of its state, not the state.
    with sqlite3.connect(db) as conn:
        keys = [k for (k,) in conn.execute("SELECT key FROM upstream_pending")]
    assert keys
    assert all(len(k) == 64 and k != "st" for k in keys)


def test_a_row_copied_onto_another_subject_does_not_open(store: SqliteGrantStore, db: Path) -> None:
    store.put_grant(grant("alice"))
    store.put_grant(UpstreamGrant("acme", "github", "mallory", access_token="mallory-token"))
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE upstream_grants SET sealed = "
            "(SELECT sealed FROM upstream_grants WHERE subject = 'alice') WHERE subject = 'mallory'"
        )
    with pytest.raises(StoreError):
        store.get_grant("acme", "github", "mallory")
    assert store.get_grant("acme", "github", "alice") is not None


def test_a_tampered_value_is_a_store_error(store: SqliteGrantStore, db: Path) -> None:
    store.put_grant(grant())
    with sqlite3.connect(db) as conn:
        (sealed,) = conn.execute("SELECT sealed FROM upstream_grants").fetchone()
        flipped = bytes(sealed[:-1]) + bytes([sealed[-1] ^ 0x80])
        conn.execute("UPDATE upstream_grants SET sealed = ?", (flipped,))
    with pytest.raises(StoreError):
        store.get_grant("acme", "github", SHARED)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE upstream_grants SET sealed = ?", ("not a blob",))
    with pytest.raises(StoreError):
        store.get_grant("acme", "github", SHARED)


def test_a_database_opened_with_another_key_does_not_decrypt(store: SqliteGrantStore, db: Path) -> None:
    store.put_grant(grant())
    other = SqliteGrantStore(db, LocalKeyCipher([os.urandom(32)]))
    with pytest.raises(StoreError):
        other.get_grant("acme", "github", SHARED)


def test_an_edited_state_column_is_corruption_not_a_new_state(store: SqliteGrantStore, db: Path) -> None:
    store.put_grant(grant())
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE upstream_grants SET state = 'root'")
    with pytest.raises(StoreError, match="unknown state"):
        store.get_grant("acme", "github", SHARED)


class RefusingCipher(GrantCipher):
    """A cipher that fails the test if anything is sealed or opened."""

    def encrypt(self, plaintext: bytes, *, context: str) -> bytes:
        raise AssertionError("listing must not seal")

    def decrypt(self, sealed: bytes, *, context: str) -> bytes:
        raise AssertionError("listing must not decrypt")


def test_listing_decrypts_nothing(store: SqliteGrantStore, db: Path) -> None:
    store.put_grant(grant())
    lister = SqliteGrantStore(db, RefusingCipher())
    assert [(s.server, s.subject, s.state) for s in lister.list_grants("acme")] == [
        ("github", SHARED, "connected")
    ]


def test_the_local_key_file_defaults_to_beside_the_database(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=str(tmp_path / "state" / "foldgate.sqlite3"))
    store = open_grant_store(settings)
    assert store.put_grant(grant()) is not None
    assert (tmp_path / "state" / "grants.key").exists()
    store.close()
    # Another process with the same settings reads what the first sealed.
    again = open_grant_store(settings)
    found = again.get_grant("acme", "github", SHARED)
    assert found is not None
    assert found.refresh_token == REFRESH
    again.close()


def test_the_key_file_comes_from_the_environment(tmp_path: Path) -> None:
    key = tmp_path / "elsewhere" / "k"
    settings = Settings.from_env(
        {"FOLDGATE_SQLITE_PATH": str(tmp_path / "db.sqlite3"), "FOLDGATE_GRANT_KEY_FILE": str(key)}
    )
    assert isinstance(open_grant_cipher(settings), LocalKeyCipher)
    assert key.exists()
    assert not (tmp_path / "grants.key").exists()


def test_the_cloud_store_without_a_key_is_refused() -> None:
    with pytest.raises(ConfigError, match="FOLDGATE_GRANT_KMS_KEY_ID"):
        open_grant_cipher(Settings(store="dynamodb"))


def test_a_file_from_before_re_registration_gets_the_new_columns_and_its_rows_stay_usable(db: Path) -> None:
    cipher = LocalKeyCipher([os.urandom(32)])
    first = SqliteGrantStore(db, cipher)
    first.put_grant(grant())
    first.put_client(ClientRegistration("acme", "github", "https://a.example", "cid"))
    first.close()
    # Back to the first release's schema: the columns re-registration added are gone.
    with sqlite3.connect(db) as conn:
        for table, column in (("upstream_grants", "reason"), ("upstream_clients", "client_id"),
                              ("upstream_clients", "claimed_at")):  # fmt: skip
            conn.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
    reopened = SqliteGrantStore(db, cipher)
    held = reopened.get_grant("acme", "github", SHARED)
    assert held is not None
    assert held.reason is None
    assert [s.reason for s in reopened.list_grants("acme")] == [None]
    old = reopened.get_client("acme", "github", "https://a.example")
    assert old is not None
    assert old.claimed_at is None
    # A row stored without its clear client_id can still be claimed and replaced (once).
    assert reopened.claim_client(old, lease_s=60.0)
    assert reopened.replace_client(
        ClientRegistration("acme", "github", "https://a.example", "cid-2"), previous="cid"
    )
    assert not reopened.replace_client(
        ClientRegistration("acme", "github", "https://a.example", "x"), previous="cid"
    )
    reopened.close()
    again = SqliteGrantStore(db, cipher)  # a file already upgraded opens as it is
    renewed = again.get_client("acme", "github", "https://a.example")
    again.close()
    assert renewed is not None
    assert renewed.client_id == "cid-2"


def test_a_tenant_key_is_sealed_and_bound_to_its_tenant(store: SqliteGrantStore, db: Path) -> None:
    pem = "-----BEGIN PRIVATE KEY-----\nDPOP_KEY_MATERIAL_0123456789\n-----END PRIVATE KEY-----\n"
    assert store.add_key("acme", "dpop", pem)
    assert store.add_key("other", "dpop", "other-pem")
    raw = b"".join(p.read_bytes() for p in db.parent.iterdir() if p.name.startswith(db.name))
    assert b"DPOP_KEY_MATERIAL" not in raw
    with sqlite3.connect(db) as conn:  # acme's sealed key copied onto another tenant does not open
        conn.execute(
            "UPDATE upstream_keys SET sealed = (SELECT sealed FROM upstream_keys WHERE tenant = 'acme') "
            "WHERE tenant = 'other'"
        )
    with pytest.raises(StoreError):
        store.get_key("other", "dpop")
    assert store.get_key("acme", "dpop") == pem
