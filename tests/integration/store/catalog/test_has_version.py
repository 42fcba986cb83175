"""The store contract's cheap loadability check (``has_version``), on SQLite and on DynamoDB (moto).

The freshness check keeps a warm copy of each tenant's current version and asks the store only whether
the version behind the pointer is still there; a version deleted, expired or never finished must
answer False so the tenant is rebuilt instead of frozen on a pointer nobody can load.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.index.indexer import catalog_from_tools
from foldgate.model.catalog import CatalogVersion
from foldgate.model.tool import Tool
from foldgate.store.catalog.base import CatalogStore
from foldgate.store.catalog.dynamodb import DynamoStore
from foldgate.store.catalog.sqlite import SqliteStore
from tests.integration.store.backends import BACKENDS, open_backend

TENANT = "acme"


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CatalogStore]:
    yield from open_backend(request, tmp_path, SqliteStore, DynamoStore)


def catalog() -> CatalogVersion:
    tool = Tool(server="svc", name="find", description="Find.", input_schema={"type": "object"})
    return catalog_from_tools(TENANT, [tool], {})


def test_has_version_is_true_for_a_published_version_and_false_for_an_unknown_one(
    any_store: CatalogStore,
) -> None:
    version = catalog()
    assert not any_store.has_version(TENANT, version.version)
    any_store.publish(version, expected_current=None)
    assert any_store.has_version(TENANT, version.version)
    assert not any_store.has_version(TENANT, "v0-nothing")
    assert not any_store.has_version("other", version.version)


def test_sqlite_has_version_is_false_once_the_version_row_is_gone(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "s.sqlite3")
    version = catalog()
    store.publish(version, expected_current=None)
    with store._lock:
        store._db.execute("DELETE FROM versions WHERE version = ?", (version.version,))
        store._db.commit()
    assert store.current_version(TENANT) == version.version
    assert not store.has_version(TENANT, version.version)
    store.close()


@pytest.mark.parametrize("how", ["deleted", "expired", "writing"])
def test_dynamodb_has_version_reads_the_manifest(dynamo_table: str, how: str) -> None:
    store = DynamoStore(dynamo_table)
    version = catalog()
    store.publish(version, expected_current=None)
    key = {"pk": {"S": f"TENANT#{TENANT}"}, "sk": {"S": f"MANIFEST#{version.version}"}}
    if how == "deleted":
        store.client.delete_item(TableName=dynamo_table, Key=key)
    elif how == "expired":
        store.client.update_item(
            TableName=dynamo_table,
            Key=key,
            UpdateExpression="SET expires_at = :t",
            ExpressionAttributeValues={":t": {"N": str(int(time.time()) - 1)}},
        )
    else:
        store.client.update_item(
            TableName=dynamo_table,
            Key=key,
            UpdateExpression="SET #s = :w",
            ExpressionAttributeNames={"#s": "state"},
            ExpressionAttributeValues={":w": {"S": "writing"}},
        )
    assert store.current_version(TENANT) == version.version
    assert not store.has_version(TENANT, version.version)
