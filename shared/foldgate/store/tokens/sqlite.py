"""Agent tokens in the embedded SQLite file (local mode)."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from foldgate.errors import ConflictError, StoreError
from foldgate.model.agent_token import AgentToken
from foldgate.store.connections import connect_sqlite
from foldgate.store.tokens.base import TokenStore, decode_tier

__all__ = ["SqliteTokenStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tokens (
    token_id TEXT PRIMARY KEY, digest TEXT NOT NULL, tenant TEXT NOT NULL, servers TEXT,
    tier TEXT NOT NULL, expires_at REAL, label TEXT, created_at REAL NOT NULL,
    revoked INTEGER NOT NULL DEFAULT 0, revoked_at REAL, last_used_at REAL);
CREATE INDEX IF NOT EXISTS tokens_by_tenant ON tokens (tenant, created_at);
"""
_COLUMNS = "token_id, tenant, servers, tier, expires_at, label, created_at, revoked, last_used_at"


def _row_token(row: tuple[Any, ...]) -> AgentToken:
    token_id, tenant, servers, tier, expires_at, label, created_at, revoked, last_used_at = row
    return AgentToken(
        token_id=str(token_id),
        tenant=str(tenant),
        servers=None if servers is None else tuple(json.loads(servers)),
        tier=decode_tier(tier),
        expires_at=None if expires_at is None else float(expires_at),
        label=None if label is None else str(label),
        created_at=float(created_at),
        revoked=bool(revoked),
        last_used_at=None if last_used_at is None else float(last_used_at),
    )


class SqliteTokenStore(TokenStore):
    """Tokens in the embedded SQLite file (local mode), beside the catalog; safe to share between threads."""

    def __init__(self, path: str | Path) -> None:
        self._lock = threading.Lock()
        self._db = connect_sqlite(path, _SCHEMA, what="token store")
        self._add_last_used()

    def _add_last_used(self) -> None:
        """Give a token table made before ``last_used_at`` existed that column (NULL: never seen used)."""
        try:
            columns = {str(r[1]) for r in self._db.execute("PRAGMA table_info(tokens)").fetchall()}
            if "last_used_at" not in columns:
                self._db.execute("ALTER TABLE tokens ADD COLUMN last_used_at REAL")
        except sqlite3.Error as exc:
            raise StoreError(f"cannot add last_used_at to the token store: {exc}") from exc

    def put(self, token: AgentToken, digest: str) -> None:
        """Insert the token; ConflictError if the id exists."""
        servers = None if token.servers is None else json.dumps(list(token.servers))
        row = (
            token.token_id,
            token.tenant,
            servers,
            token.tier,
            token.expires_at,
            token.label,
            token.created_at,
            int(token.revoked),
            token.last_used_at,
            digest,
        )
        with self._lock:
            try:
                self._db.execute(
                    f"INSERT INTO tokens ({_COLUMNS}, digest) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row
                )
            except sqlite3.IntegrityError as exc:
                raise ConflictError(f"token id {token.token_id} is already taken") from exc
            except sqlite3.Error as exc:
                raise StoreError(f"cannot store token {token.token_id}: {exc}") from exc

    def get(self, token_id: str) -> tuple[AgentToken, str] | None:
        """The token and its digest, None if unknown."""
        with self._lock:
            try:
                row = self._db.execute(
                    f"SELECT {_COLUMNS}, digest FROM tokens WHERE token_id = ?", (token_id,)
                ).fetchone()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read token {token_id}: {exc}") from exc
        if row is None:
            return None
        return _row_token(tuple(row[:-1])), str(row[-1])

    def list(self, tenant: str | None = None) -> list[AgentToken]:
        """Tokens (of one tenant), oldest first."""
        query = f"SELECT {_COLUMNS} FROM tokens"
        params: tuple[str, ...] = ()
        if tenant is not None:
            query += " WHERE tenant = ?"
            params = (tenant,)
        with self._lock:
            try:
                rows = self._db.execute(query + " ORDER BY created_at, token_id", params).fetchall()
            except sqlite3.Error as exc:
                raise StoreError(f"cannot list tokens: {exc}") from exc
        return [_row_token(tuple(r)) for r in rows]

    def revoke(self, token_id: str) -> bool:
        """Mark revoked (the first revocation time is kept); False if unknown."""
        with self._lock:
            try:
                cur = self._db.execute(
                    "UPDATE tokens SET revoked = 1, revoked_at = COALESCE(revoked_at, ?) WHERE token_id = ?",
                    (time.time(), token_id),
                )
            except sqlite3.Error as exc:
                raise StoreError(f"cannot revoke token {token_id}: {exc}") from exc
        return cur.rowcount > 0

    def touch(self, token_id: str, at: float) -> None:
        """One UPDATE, kept only when later than what is recorded."""
        with self._lock:
            try:
                self._db.execute(
                    "UPDATE tokens SET last_used_at = ? WHERE token_id = ? "
                    "AND (last_used_at IS NULL OR last_used_at < ?)",
                    (at, token_id, at),
                )
            except sqlite3.Error as exc:
                raise StoreError(f"cannot record the use of token {token_id}: {exc}") from exc

    def close(self) -> None:
        """Close the database."""
        with self._lock:
            self._db.close()
