"""Upstream grants in the embedded SQLite file (local mode), sealed by a :class:`GrantCipher`.

Three tables beside the catalog's: ``upstream_grants`` (one row per tenant, server and subject: the
sealed document plus the clear columns listing needs), ``upstream_clients`` (sealed registrations,
with the clear ``client_id`` and ``claimed_at`` their conditional writes test) and
``upstream_pending`` (sealed consents in flight, addressed by the digest of their ``state``),
``upstream_used_links`` (the digests of used connect-link nonces, until the link expires) and
``upstream_keys`` (a tenant's sealed private keys: its DPoP key). The
conditional writes and the single-use take are single SQL statements, so they hold between processes
sharing the file, not just between threads.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path

from foldgate.errors import ConflictError, StoreError
from foldgate.store.connections import connect_sqlite
from foldgate.store.grants.base import (
    ClientRegistration,
    GrantCipher,
    GrantStore,
    GrantSummary,
    PendingConsent,
    UpstreamGrant,
)
from foldgate.store.grants.codec import (
    decode_state,
    link_key,
    open_client,
    open_grant,
    open_key,
    open_pending,
    pending_key,
    seal_client,
    seal_grant,
    seal_key,
    seal_pending,
    stamped,
)

__all__ = ["SqliteGrantStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS upstream_grants (
    tenant TEXT NOT NULL, server TEXT NOT NULL, subject TEXT NOT NULL, state TEXT NOT NULL,
    expires_at REAL, scope TEXT, updated_at REAL NOT NULL, version INTEGER NOT NULL, sealed BLOB NOT NULL,
    PRIMARY KEY (tenant, server, subject));
CREATE TABLE IF NOT EXISTS upstream_clients (
    tenant TEXT NOT NULL, server TEXT NOT NULL, issuer TEXT NOT NULL, sealed BLOB NOT NULL,
    PRIMARY KEY (tenant, server, issuer));
CREATE TABLE IF NOT EXISTS upstream_pending (
    key TEXT PRIMARY KEY, expires_at REAL NOT NULL, sealed BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS upstream_used_links (key TEXT PRIMARY KEY, expires_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS upstream_keys (
    tenant TEXT NOT NULL, name TEXT NOT NULL, sealed BLOB NOT NULL, PRIMARY KEY (tenant, name));
"""

# Columns added after the first release: a file made before gets them on open (NULL in old rows).
_ADDED = (("upstream_grants", "reason", "TEXT"), ("upstream_clients", "client_id", "TEXT"),
          ("upstream_clients", "claimed_at", "REAL"))  # fmt: skip
# The client row is still the one read: its client_id (NULL in a row stored before it was kept).
_SAME_CLIENT = "(client_id = ? OR client_id IS NULL)"


def _blob(value: object) -> bytes:
    if not isinstance(value, bytes):
        raise StoreError("stored grant value is not a sealed blob")
    return value


def _num(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StoreError("stored grant row is corrupt")
    return float(value)


class SqliteGrantStore(GrantStore):
    """Grants in the embedded SQLite file; safe to share between threads and processes."""

    def __init__(
        self, path: str | Path, cipher: GrantCipher, *, clock: Callable[[], float] = time.time
    ) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="grant store")
        self._cipher = cipher
        self._clock = clock
        self._add_columns()

    def _columns(self, table: str) -> set[str]:
        return {str(row[1]) for row in self._run("read the schema", f"PRAGMA table_info({table})", ())[0]}

    def _add_columns(self) -> None:
        for table, column, kind in _ADDED:
            if column in self._columns(table):
                continue
            try:
                self._run("upgrade the schema", f"ALTER TABLE {table} ADD COLUMN {column} {kind}", ())
            except StoreError:
                # Another process sharing the file may have added it between the look and the ALTER.
                if column not in self._columns(table):
                    raise

    def _run(self, what: str, sql: str, params: tuple[object, ...]) -> tuple[list[tuple[object, ...]], int]:
        """The statement's rows and row count, stepped to completion under the lock (a RETURNING
        statement left half-read would keep its write open)."""
        with self._lock:
            try:
                cur = self._db.execute(sql, params)
                return cur.fetchall(), cur.rowcount
            except sqlite3.Error as exc:
                raise StoreError(f"cannot {what}: {exc}") from exc

    def get_grant(self, tenant: str, server: str, subject: str) -> UpstreamGrant | None:
        """The grant, opened; None when there is none."""
        rows = self._run(
            f"read the grant of {tenant}/{server}",
            "SELECT state, updated_at, version, sealed FROM upstream_grants "
            "WHERE tenant = ? AND server = ? AND subject = ?",
            (tenant, server, subject),
        )[0]
        if not rows:
            return None
        state, updated_at, version, sealed = rows[0]
        return open_grant(
            self._cipher, _blob(sealed), tenant=tenant, server=server, subject=subject,
            state=state, updated_at=_num(updated_at), version=int(_num(version)),
        )  # fmt: skip

    def put_grant(self, grant: UpstreamGrant) -> UpstreamGrant | None:
        """Insert (version 0) or update where the stored version is still ``grant.version``; None if
        another writer got there first. The store stamps ``updated_at`` and the new version."""
        if grant.version < 0:
            raise StoreError(f"grant version {grant.version} is not a stored version")
        now = self._clock()
        sealed = seal_grant(self._cipher, grant)
        what = f"store the grant of {grant.tenant}/{grant.server}"
        if grant.version == 0:
            _, count = self._run(
                what,
                "INSERT INTO upstream_grants (tenant, server, subject, state, expires_at, scope, reason, "
                "updated_at, version, sealed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT DO NOTHING",
                (grant.tenant, grant.server, grant.subject, grant.state, grant.expires_at, grant.scope,
                 grant.reason, now, sealed),
            )  # fmt: skip
        else:
            _, count = self._run(
                what,
                "UPDATE upstream_grants SET state = ?, expires_at = ?, scope = ?, reason = ?, "
                "updated_at = ?, version = version + 1, sealed = ? "
                "WHERE tenant = ? AND server = ? AND subject = ? AND version = ?",
                (grant.state, grant.expires_at, grant.scope, grant.reason, now, sealed,
                 grant.tenant, grant.server, grant.subject, grant.version),
            )  # fmt: skip
        if count != 1:
            return None
        return stamped(grant, version=grant.version + 1, updated_at=now)

    def delete_grant(self, tenant: str, server: str, subject: str) -> bool:
        """Forget the grant; True if there was one."""
        _, count = self._run(
            f"delete the grant of {tenant}/{server}",
            "DELETE FROM upstream_grants WHERE tenant = ? AND server = ? AND subject = ?",
            (tenant, server, subject),
        )
        return count > 0

    def list_grants(self, tenant: str, server: str | None = None) -> list[GrantSummary]:
        """Summaries from the clear columns only: nothing is decrypted, no token leaves the file."""
        query = "SELECT server, subject, state, expires_at, scope, updated_at, reason FROM upstream_grants"
        query += " WHERE tenant = ?"
        params: tuple[object, ...] = (tenant,)
        if server is not None:
            query += " AND server = ?"
            params = (tenant, server)
        rows, _ = self._run("list grants", query + " ORDER BY server, subject", params)
        return [
            GrantSummary(
                tenant=tenant,
                server=str(srv),
                subject=str(subject),
                state=decode_state(state),
                expires_at=None if expires_at is None else _num(expires_at),
                scope=None if scope is None else str(scope),
                updated_at=_num(updated_at),
                reason=None if reason is None else str(reason),
            )
            for srv, subject, state, expires_at, scope, updated_at, reason in rows
        ]

    def get_client(self, tenant: str, server: str, issuer: str) -> ClientRegistration | None:
        """The registration for this server at ``issuer``, opened."""
        rows, _ = self._run(
            f"read the client of {tenant}/{server}",
            "SELECT sealed, claimed_at FROM upstream_clients WHERE tenant = ? AND server = ? AND issuer = ?",
            (tenant, server, issuer),
        )
        if not rows:
            return None
        sealed, claimed = rows[0]
        return open_client(
            self._cipher, _blob(sealed), tenant=tenant, server=server, issuer=issuer,
            claimed_at=None if claimed is None else _num(claimed),
        )  # fmt: skip

    def put_client(self, client: ClientRegistration) -> None:
        """Upsert the sealed registration (clearing any claim)."""
        self._run(
            f"store the client of {client.tenant}/{client.server}",
            "INSERT INTO upstream_clients (tenant, server, issuer, sealed, client_id) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (tenant, server, issuer) DO UPDATE SET sealed = excluded.sealed, "
            "client_id = excluded.client_id, claimed_at = NULL",
            (
                client.tenant,
                client.server,
                client.issuer,
                seal_client(self._cipher, client),
                client.client_id,
            ),
        )

    def replace_client(self, client: ClientRegistration, *, previous: str | None) -> bool:
        """One statement: insert where none is stored, or update where ``previous`` still is."""
        what = f"store the client of {client.tenant}/{client.server}"
        sealed = seal_client(self._cipher, client)
        if previous is None:
            _, count = self._run(
                what,
                "INSERT INTO upstream_clients (tenant, server, issuer, sealed, client_id) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT DO NOTHING",
                (client.tenant, client.server, client.issuer, sealed, client.client_id),
            )
        else:
            _, count = self._run(
                what,
                "UPDATE upstream_clients SET sealed = ?, client_id = ?, claimed_at = NULL "
                f"WHERE tenant = ? AND server = ? AND issuer = ? AND {_SAME_CLIENT}",
                (sealed, client.client_id, client.tenant, client.server, client.issuer, previous),
            )
        return count == 1

    def claim_client(self, client: ClientRegistration, *, lease_s: float) -> bool:
        """One UPDATE conditional on the client_id and on no live claim."""
        now = self._clock()
        _, count = self._run(
            f"claim the client of {client.tenant}/{client.server}",
            "UPDATE upstream_clients SET claimed_at = ? "
            f"WHERE tenant = ? AND server = ? AND issuer = ? AND {_SAME_CLIENT} "
            "AND (claimed_at IS NULL OR claimed_at <= ?)",
            (now, client.tenant, client.server, client.issuer, client.client_id, now - lease_s),
        )
        return count == 1

    def get_key(self, tenant: str, name: str) -> str | None:
        """The sealed key, opened; None when none is stored."""
        rows, _ = self._run(
            f"read the {name} key of {tenant}",
            "SELECT sealed FROM upstream_keys WHERE tenant = ? AND name = ?",
            (tenant, name),
        )
        return open_key(self._cipher, _blob(rows[0][0]), tenant=tenant, name=name) if rows else None

    def add_key(self, tenant: str, name: str, pem: str) -> bool:
        """One INSERT that does nothing when a key is stored (processes sharing the file agree)."""
        _, count = self._run(
            f"store the {name} key of {tenant}",
            "INSERT INTO upstream_keys (tenant, name, sealed) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
            (tenant, name, seal_key(self._cipher, tenant, name, pem)),
        )
        return count == 1

    def put_pending(self, pending: PendingConsent) -> None:
        """Remember the consent (ConflictError if its state is taken); expired ones are purged here,
        so abandoned consents do not pile up."""
        now = self._clock()
        self._run("purge pending consents", "DELETE FROM upstream_pending WHERE expires_at <= ?", (now,))
        try:
            self._run(
                "store a pending consent",
                "INSERT INTO upstream_pending (key, expires_at, sealed) VALUES (?, ?, ?)",
                (pending_key(pending.state), pending.expires_at, seal_pending(self._cipher, pending)),
            )
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise ConflictError("a pending consent with this state exists") from exc
            raise

    def take_pending(self, state: str) -> PendingConsent | None:
        """Delete and return in one statement (two callbacks racing: one gets it); expired is None."""
        rows, _ = self._run(
            "take a pending consent",
            "DELETE FROM upstream_pending WHERE key = ? RETURNING sealed",
            (pending_key(state),),
        )
        if not rows:
            return None
        pending = open_pending(self._cipher, _blob(rows[0][0]), state=state)
        # The sealed expiry decides: the clear column only drives the purge.
        return pending if pending.expires_at > self._clock() else None

    def use_link(self, nonce: str, expires_at: float) -> bool:
        """One INSERT that does nothing when the nonce is there (processes sharing the file agree);
        expired marks are purged here, after their links stopped verifying."""
        now = self._clock()
        self._run("purge used links", "DELETE FROM upstream_used_links WHERE expires_at <= ?", (now,))
        _, count = self._run(
            "mark a connect link used",
            "INSERT INTO upstream_used_links (key, expires_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
            (link_key(nonce), expires_at),
        )
        return count == 1

    def link_used(self, nonce: str) -> bool:
        """A mark still kept (expired ones are as good as purged)."""
        rows, _ = self._run(
            "read a used link",
            "SELECT 1 FROM upstream_used_links WHERE key = ? AND expires_at > ?",
            (link_key(nonce), self._clock()),
        )
        return bool(rows)

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
