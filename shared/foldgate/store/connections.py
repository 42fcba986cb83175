"""The connections every store shares: one SQLite file per process (local mode) opened the same way,
and one DynamoDB client per process (cloud) with paginated reads.

One client serves the catalog, result, approval and token stores: each ``boto3.client`` costs tens of
milliseconds of cold start, so they are not made four times.
"""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from typing import Any

from foldgate.errors import StoreError

__all__ = ["aws_errors", "connect_sqlite", "dynamodb_client", "paginate"]


def connect_sqlite(path: str | Path, schema: str, *, what: str) -> sqlite3.Connection:
    """An autocommit connection shared by threads (callers hold their own lock), WAL, schema applied."""
    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    try:
        db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA busy_timeout=5000")
        db.executescript(schema)
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open SQLite {what} {path}: {exc}") from exc
    return db


@functools.cache
def dynamodb_client() -> Any:
    """The process's low-level DynamoDB client (honours ``AWS_ENDPOINT_URL_DYNAMODB``); boto3 is
    imported here, never at module import."""
    # boto3 (~0.3 s) loads only in instances that use DynamoDB.
    import boto3
    from botocore.config import Config

    config = Config(
        retries={"mode": "standard", "max_attempts": 5}, connect_timeout=2, read_timeout=5, tcp_keepalive=True
    )
    return boto3.client("dynamodb", config=config)


def aws_errors() -> tuple[type[Exception], ...]:
    """The exceptions a boto3 call raises on AWS or transport failure."""
    # boto3 (~0.3 s) loads only in instances that use DynamoDB.
    from botocore.exceptions import BotoCoreError, ClientError

    return (ClientError, BotoCoreError)


def paginate(call: Any, **kwargs: Any) -> list[dict[str, Any]]:
    """Every item of a Query or Scan (``call`` is ``client.query`` or ``client.scan``), all pages."""
    items: list[dict[str, Any]] = []
    while True:
        resp = call(**kwargs)
        items.extend(resp.get("Items", []))
        if "LastEvaluatedKey" not in resp:
            return items
        kwargs["ExclusiveStartKey"] = resp["LastEvaluatedKey"]
