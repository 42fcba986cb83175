"""SqliteApprovalStore on a file written before rejections existed: opening it adds the rejections
table and keeps every approval."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from foldgate.store.approvals.sqlite import SqliteApprovalStore


def test_a_file_from_before_rejections_gains_them_and_keeps_its_approvals(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE approvals (tenant TEXT NOT NULL, key TEXT NOT NULL, hash TEXT NOT NULL, "
            "PRIMARY KEY (tenant, key))"
        )
        db.execute("INSERT INTO approvals VALUES ('acme', 'crm:find', ?)", ("a" * 64,))
    db.close()
    store = SqliteApprovalStore(path)
    assert store.approved("acme") == {"crm:find": "a" * 64}
    assert store.rejected("acme") == {}
    store.reject("acme", {"crm:find": "b" * 64})
    store.close()
    reopened = SqliteApprovalStore(path)
    assert reopened.rejected("acme") == {"crm:find": "b" * 64}
    reopened.close()
