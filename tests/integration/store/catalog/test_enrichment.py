"""The store contract for enrichment, on SQLite and on DynamoDB (moto): a tool's enrichment is
published and loaded with its catalog version, and a version published without any loads as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.index.indexer import catalog_from_tools
from foldgate.model.enrichment import Enrichment
from foldgate.model.tool import Tool
from foldgate.store.catalog.base import CatalogStore
from foldgate.store.catalog.dynamodb import DynamoStore
from foldgate.store.catalog.sqlite import SqliteStore
from tests.integration.store.backends import BACKENDS, open_backend

TENANT = "acme"
TOOLS = [Tool("svc", "find", "Find a record."), Tool("svc", "drop", "Drop a record.")]


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CatalogStore]:
    yield from open_backend(request, tmp_path, SqliteStore, DynamoStore)


def test_an_enrichment_is_published_and_loaded_with_its_version(any_store: CatalogStore) -> None:
    made = Enrichment("Use to look one record up.", ("find record 7",), TOOLS[0].content_hash, "x:model")
    version = catalog_from_tools(TENANT, TOOLS, {}, enrichments={TOOLS[0].key: made})
    any_store.publish(version, expected_current=None)
    loaded = any_store.load_current(TENANT)
    assert loaded is not None
    assert loaded.by_key["svc:find"].enrichment == made
    assert loaded.by_key["svc:drop"].enrichment is None
    assert loaded.fingerprint == version.fingerprint
    assert loaded.search == version.search


def test_a_version_without_enrichment_loads_as_before(any_store: CatalogStore) -> None:
    version = catalog_from_tools(TENANT, TOOLS, {})
    any_store.publish(version, expected_current=None)
    loaded = any_store.load_current(TENANT)
    assert loaded is not None
    assert all(t.enrichment is None for t in loaded.tools)
    assert loaded.fingerprint == version.fingerprint
