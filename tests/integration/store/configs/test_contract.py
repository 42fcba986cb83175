"""The TenantConfigStore contract, run over SQLite and DynamoDB (moto_server) alike: a document is read
back as written, an unchanged one writes nothing, the registry lists exactly the tenants that have a
document, and hostile ids or oversized documents never reach the backend."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from foldgate.errors import ConflictError, InvalidRequestError
from foldgate.store.configs.base import MAX_DOC_BYTES, TenantConfigStore
from foldgate.store.configs.dynamodb import DynamoTenantConfigStore
from foldgate.store.configs.sqlite import SqliteTenantConfigStore
from tests.integration.store.backends import BACKENDS, open_backend

DOC: dict[str, Any] = {"routing_mode": "direct", "servers": [{"name": "gh", "url": "https://x.example/mcp"}]}


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TenantConfigStore]:
    yield from open_backend(request, tmp_path, SqliteTenantConfigStore, DynamoTenantConfigStore)


def test_a_document_reads_back_as_written_and_lists_its_tenant(store: TenantConfigStore) -> None:
    assert store.get("acme") is None
    assert store.tenants() == []
    stored, wrote = store.put("acme", DOC)
    assert wrote
    got = store.get("acme", consistent=True)
    assert got is not None
    assert got.doc == DOC
    assert got.revision == stored.revision
    assert store.tenants() == ["acme"]


def test_an_unchanged_document_writes_nothing_and_keeps_its_revision(store: TenantConfigStore) -> None:
    first, _ = store.put("acme", DOC)
    again, wrote = store.put("acme", dict(reversed(list(DOC.items()))))  # same document, other key order
    assert not wrote
    assert again.revision == first.revision
    changed, wrote = store.put("acme", {**DOC, "routing_mode": "retrieve_tools"})
    assert wrote
    assert changed.revision != first.revision
    got = store.get("acme", consistent=True)
    assert got is not None
    assert got.doc["routing_mode"] == "retrieve_tools"


def test_the_registry_lists_every_tenant_once_sorted_and_forgets_deleted_ones(
    store: TenantConfigStore,
) -> None:
    for tenant in ("zeta", "acme", "m.id-1_x"):
        store.put(tenant, DOC)
    store.put("acme", {**DOC, "tools_limit": 5})
    assert store.tenants() == ["acme", "m.id-1_x", "zeta"]
    assert store.delete("acme")
    assert not store.delete("acme")
    assert store.get("acme", consistent=True) is None
    assert store.tenants() == ["m.id-1_x", "zeta"]


@pytest.mark.parametrize("tenant", ["", "../x", "a/b", "a#CONFIG", ".hidden", "x" * 129, "é"])
def test_a_hostile_tenant_id_is_refused_before_any_write(store: TenantConfigStore, tenant: str) -> None:
    with pytest.raises(InvalidRequestError):
        store.put(tenant, DOC)
    assert store.tenants() == []


def test_an_oversized_or_non_object_document_is_refused(store: TenantConfigStore) -> None:
    with pytest.raises(InvalidRequestError, match="larger than"):
        store.put("acme", {"instructions": "x" * (MAX_DOC_BYTES + 1)})
    with pytest.raises(InvalidRequestError, match="JSON object"):
        store.put("acme", ["not", "an", "object"])  # type: ignore[arg-type]
    assert store.tenants() == []


def test_two_stores_on_one_backend_see_each_others_writes(
    store: TenantConfigStore, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Two instances (the CLI writing, a function reading) share one file or table."""
    other: TenantConfigStore = (
        SqliteTenantConfigStore(tmp_path / "store.sqlite3")
        if isinstance(store, SqliteTenantConfigStore)
        else DynamoTenantConfigStore(request.getfixturevalue("dynamo_table"))
    )
    try:
        store.put("acme", DOC)
        got = other.get("acme", consistent=True)
        assert got is not None
        assert got.doc == DOC
        assert other.tenants() == ["acme"]
    finally:
        other.close()


def test_a_conditional_write_lands_only_on_the_revision_it_read(store: TenantConfigStore) -> None:
    """The console's edits: of two editors who read one revision, the second is refused and the
    document is the first one's."""
    first, _ = store.put("acme", DOC)
    mine, wrote = store.put("acme", {**DOC, "tools_limit": 7}, expected_revision=first.revision)
    assert wrote
    with pytest.raises(ConflictError):
        store.put("acme", {**DOC, "tools_limit": 9}, expected_revision=first.revision)
    got = store.get("acme", consistent=True)
    assert got is not None
    assert got.doc["tools_limit"] == 7
    assert got.revision == mine.revision
    # A tenant without a document has no revision a page could have read.
    with pytest.raises(ConflictError):
        store.put("newco", DOC, expected_revision=first.revision)
    assert store.tenants() == ["acme"]


def test_a_conditional_write_is_refused_when_another_writer_came_between_read_and_write(
    store: TenantConfigStore,
) -> None:
    """The revision is checked in the write itself, not only by the read before it."""
    first, _ = store.put("acme", DOC)
    real_get = store.get

    def stale_get(tenant: str, *, consistent: bool = False) -> Any:
        # Another writer lands just after this put read the first revision.
        seen = real_get(tenant, consistent=consistent)
        store.get = real_get  # type: ignore[method-assign]
        store.put("acme", {**DOC, "tools_limit": 3})
        return seen

    store.get = stale_get  # type: ignore[method-assign]
    with pytest.raises(ConflictError):
        store.put("acme", {**DOC, "tools_limit": 8}, expected_revision=first.revision)
    got = store.get("acme", consistent=True)
    assert got is not None
    assert got.doc["tools_limit"] == 3
