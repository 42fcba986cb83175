"""Upstream grants in the embedded SQLite file (local mode), sealed by a :class:`GrantCipher`.

Three tables beside the catalog's: ``upstream_grants`` (one row per tenant, server and subject: the
sealed document plus the clear columns listing needs), ``upstream_clients`` (sealed registrations) and
``upstream_pending`` (sealed consents in flight, addressed by the digest of their ``state``). The
conditional write and the single-use take are single SQL statements, so they hold between processes
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
    open_client,
    open_grant,
    open_pending,
    pending_key,
    seal_client,
    seal_grant,
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
"""


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
                "INSERT INTO upstream_grants (tenant, server, subject, state, expires_at, scope, "
                "updated_at, version, sealed) VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?) ON CONFLICT DO NOTHING",
                (grant.tenant, grant.server, grant.subject, grant.state, grant.expires_at, grant.scope,
                 now, sealed),
            )  # fmt: skip
        else:
            _, count = self._run(
                what,
                "UPDATE upstream_grants SET state = ?, expires_at = ?, scope = ?, updated_at = ?, "
                "version = version + 1, sealed = ? "
                "WHERE tenant = ? AND server = ? AND subject = ? AND version = ?",
                (grant.state, grant.expires_at, grant.scope, now, sealed,
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
        query = "SELECT server, subject, state, expires_at, scope, updated_at FROM upstream_grants"
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
            )
            for srv, subject, state, expires_at, scope, updated_at in rows
        ]

    def get_client(self, tenant: str, server: str, issuer: str) -> ClientRegistration | None:
        """The registration for this server at ``issuer``, opened."""
        rows, _ = self._run(
            f"read the client of {tenant}/{server}",
            "SELECT sealed FROM upstream_clients WHERE tenant = ? AND server = ? AND issuer = ?",
            (tenant, server, issuer),
        )
        if not rows:
            return None
        return open_client(self._cipher, _blob(rows[0][0]), tenant=tenant, server=server, issuer=issuer)

    def put_client(self, client: ClientRegistration) -> None:
        """Upsert the sealed registration."""
        self._run(
            f"store the client of {client.tenant}/{client.server}",
            "INSERT INTO upstream_clients (tenant, server, issuer, sealed) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (tenant, server, issuer) DO UPDATE SET sealed = excluded.sealed",
            (client.tenant, client.server, client.issuer, seal_client(self._cipher, client)),
        )

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

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
