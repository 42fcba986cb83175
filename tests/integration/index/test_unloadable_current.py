"""A pointer to a catalog version that cannot be loaded never freezes a tenant (issue 24, item 8).

The current version may be missing (deleted by hand or by TTL), incomplete (a chunk gone, a manifest
left ``writing``) or expired (marked for TTL deletion that has not happened yet). On SQLite and on
DynamoDB (the real moto_server table) the next index run, whole or triggered by a freshness check,
rebuilds from the listings and publishes over that pointer, and says so in its report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.tenant import TenantConfig, parse_tenant_config
from foldgate.index.freshness import FreshnessCheck
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.base import CatalogStore
from foldgate.store.catalog.dynamodb import DynamoStore
from foldgate.store.catalog.sqlite import SqliteStore
from tests.integration.store.backends import BACKENDS, open_backend
from tests.upstreams.listing import ListingUpstream

TENANT = "acme"


def config() -> TenantConfig:
    return parse_tenant_config({"servers": [{"name": "crm", "url": "http://127.0.0.1:9/mcp"}]})


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CatalogStore]:
    yield from open_backend(request, tmp_path, SqliteStore, DynamoStore)


def _items(store: DynamoStore, version: str) -> list[dict[str, Any]]:
    """The version's manifest, then its chunks."""
    resp = store.client.query(
        TableName=store.table_name,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": f"TENANT#{TENANT}"}},
        ConsistentRead=True,
    )
    items: list[dict[str, Any]] = resp["Items"]
    manifest = [it for it in items if it["sk"]["S"] == f"MANIFEST#{version}"]
    chunks = [it for it in items if it["sk"]["S"].startswith(f"VERSION#{version}#")]
    return manifest + chunks


def _key(item: dict[str, Any]) -> dict[str, Any]:
    return {"pk": item["pk"], "sk": item["sk"]}


def missing(store: CatalogStore, version: str) -> None:
    """The whole version is gone (TTL deleted it, or a hand clean-up); the pointer still names it."""
    if isinstance(store, SqliteStore):
        with store._lock:
            store._db.execute("DELETE FROM versions WHERE tenant = ? AND version = ?", (TENANT, version))
            store._db.commit()
        return
    assert isinstance(store, DynamoStore)
    for item in _items(store, version):
        store.client.delete_item(TableName=store.table_name, Key=_key(item))


def chunk_lost(store: CatalogStore, version: str) -> None:
    """Incomplete: one chunk of the version is gone (a partial write or a partial TTL deletion)."""
    assert isinstance(store, DynamoStore)
    chunk = _items(store, version)[1]
    store.client.delete_item(TableName=store.table_name, Key=_key(chunk))


def still_writing(store: CatalogStore, version: str) -> None:
    """Incomplete: the manifest says its chunks were never all written."""
    assert isinstance(store, DynamoStore)
    store.client.update_item(
        TableName=store.table_name,
        Key=_key(_items(store, version)[0]),
        UpdateExpression="SET #s = :w",
        ExpressionAttributeNames={"#s": "state"},
        ExpressionAttributeValues={":w": {"S": "writing"}},
    )


def expired(store: CatalogStore, version: str) -> None:
    """Expired: marked for TTL deletion in the past, not deleted yet (DynamoDB lags by up to days)."""
    assert isinstance(store, DynamoStore)
    store.client.update_item(
        TableName=store.table_name,
        Key=_key(_items(store, version)[0]),
        UpdateExpression="SET expires_at = :t",
        ExpressionAttributeValues={":t": {"N": str(int(time.time()) - 1)}},
    )


BREAKAGES: dict[str, Callable[[CatalogStore, str], None]] = {
    "missing": missing,
    "chunk_lost": chunk_lost,
    "still_writing": still_writing,
    "expired": expired,
}
# SQLite writes a version and its pointer in one transaction: only a deleted version can break it.
CASES = [("sqlite", "missing")] + [("dynamodb", how) for how in BREAKAGES]


def _break(store: CatalogStore, how: str) -> str:
    version = store.current_version(TENANT)
    assert version is not None
    BREAKAGES[how](store, version)
    assert store.current_version(TENANT) == version
    assert store.load_current(TENANT) is None  # the pointer names a version nobody can load
    return version


async def _first_catalog(store: CatalogStore) -> tuple[Indexer, ListingUpstream]:
    upstream = ListingUpstream()
    upstream.tools = [{"name": "find", "description": "Find a customer.", "inputSchema": {"type": "object"}}]
    indexer = Indexer(store, upstream)
    first = await indexer.index_tenant(TENANT, config())
    assert first.changed, first.error
    return indexer, upstream


@pytest.mark.parametrize(("store", "how"), CASES, indirect=["store"])
async def test_a_pointer_to_an_unloadable_version_is_rebuilt_and_published_over(
    store: CatalogStore, how: str
) -> None:
    indexer, _ = await _first_catalog(store)
    broken = _break(store, how)
    report = await indexer.index_tenant(TENANT, config())
    assert report.changed, report.error
    assert not report.conflict
    assert report.recovered is not None
    assert broken in report.recovered
    assert report.version is not None
    assert report.version != broken
    assert store.current_version(TENANT) == report.version
    current = store.load_current(TENANT)
    assert current is not None
    assert [t.published for t in current.tools] == ["crm__find"]
    # The tenant is unfrozen: the next run finds nothing to change and writes nothing.
    again = await indexer.index_tenant(TENANT, config())
    assert not again.changed
    assert again.error is None
    assert again.recovered is None


async def test_a_freshness_check_rebuilds_over_a_missing_version(store: CatalogStore) -> None:
    indexer, _ = await _first_catalog(store)
    check = FreshnessCheck(indexer)
    assert await check.check(TENANT, config()) is None  # unchanged listing: nothing to do
    broken = _break(store, "missing")
    report = await check.check(TENANT, config())
    assert report is not None
    assert report.changed, report.error
    assert store.current_version(TENANT) == report.version != broken
    assert store.load_current(TENANT) is not None


async def test_a_scoped_run_over_a_missing_version_indexes_the_whole_tenant(store: CatalogStore) -> None:
    indexer, _ = await _first_catalog(store)
    _break(store, "missing")
    report = await indexer.index_scoped(TENANT, config(), {"crm"})
    assert report.changed, report.error
    assert store.load_current(TENANT) is not None
