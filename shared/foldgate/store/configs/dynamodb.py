"""Tenant config documents on the DynamoDB table, with the tenant registry beside them.

Items (see docs/dynamodb.md):

* ``TENANT#{tenant}`` / ``CONFIG``: ``doc`` (canonical JSON, at most 256 KB), ``revision``,
  ``updated_at``, in the tenant's own partition beside its catalog versions (whose sort keys are
  ``CURRENT``, ``MANIFEST#...`` and ``VERSION#...``, so nothing collides);
* ``TENANTS`` / ``{tenant}``: the registry entry, ``revision`` and ``updated_at`` only (~82 bytes), so
  one Query page (1 MB) lists ~12,800 tenants: 10,000 tenants cost 1 call of ~100 read units where
  Parameter Store's DescribeParameters took one call per 50 names (docs/scale.md).

Both are written in one TransactWriteItems: a listed tenant always has its document, and a document
always its entry. Only the operator writes here: ``foldgate tenant apply`` with the operator's own
credentials, or the console's fleet edits in AdminFunction (conditional on the revision the page was
shown); the functions serving agents read (GetItem, Query), as they already may on the whole table.
"""

from __future__ import annotations

import time
from typing import Any, Final

from foldgate.errors import ConflictError, StoreError
from foldgate.store.configs.base import (
    STALE,
    StoredConfig,
    TenantConfigStore,
    check_tenant,
    decoded,
    encoded,
    revision_of,
)
from foldgate.store.connections import aws_errors, dynamodb_client, paginate

__all__ = ["CONFIG_SK", "REGISTRY_PK", "DynamoTenantConfigStore", "registry_item"]

CONFIG_SK: Final = "CONFIG"
REGISTRY_PK: Final = "TENANTS"


def _config_key(tenant: str) -> dict[str, Any]:
    return {"pk": {"S": f"TENANT#{tenant}"}, "sk": {"S": CONFIG_SK}}


def _registry_key(tenant: str) -> dict[str, Any]:
    return {"pk": {"S": REGISTRY_PK}, "sk": {"S": tenant}}


def registry_item(tenant: str, revision: str, updated_at: float) -> dict[str, Any]:
    """The tenant's registry entry as stored (the storage bench sizes and writes it the same way)."""
    return {**_registry_key(tenant), **_stamp(revision, updated_at)}


def _stamp(revision: str, updated_at: float) -> dict[str, Any]:
    return {"revision": {"S": revision}, "updated_at": {"N": f"{updated_at:.3f}"}}


def _condition_failed(exc: Exception) -> bool:
    """Whether a transaction was cancelled by a failed condition (not a throttle or a conflict)."""
    response = getattr(exc, "response", None) or {}
    if response.get("Error", {}).get("Code") != "TransactionCanceledException":
        return False
    reasons = response.get("CancellationReasons") or []
    if reasons:
        return any(r.get("Code") == "ConditionalCheckFailed" for r in reasons)
    return "ConditionalCheckFailed" in str(response.get("Error", {}).get("Message", ""))


class DynamoTenantConfigStore(TenantConfigStore):
    """Config documents and the registry on the catalog table; ``client`` is a low-level dynamodb
    client (the process's shared one when not given)."""

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else dynamodb_client()
        self._errors = aws_errors()

    def put(
        self, tenant: str, doc: dict[str, Any], *, expected_revision: str | None = None
    ) -> tuple[StoredConfig, bool]:
        """One consistent GetItem; when the document changed, one TransactWriteItems of both items
        (with ``expected_revision``, the document's Put conditional on that revision)."""
        check_tenant(tenant)
        text, revision = encoded(doc), revision_of(doc)
        current = self.get(tenant, consistent=True)
        if expected_revision is not None and (current is None or current.revision != expected_revision):
            raise ConflictError(f"{tenant}: {STALE}")
        if current is not None and current.revision == revision:
            return current, False
        now = time.time()
        stamp = _stamp(revision, now)
        put: dict[str, Any] = {
            "TableName": self.table_name,
            "Item": {**_config_key(tenant), "doc": {"S": text}, **stamp},
        }
        if expected_revision is not None:
            # Checked again in the write itself: another writer may have come between read and write.
            put["ConditionExpression"] = "revision = :expected"
            put["ExpressionAttributeValues"] = {":expected": {"S": expected_revision}}
        try:
            self.client.transact_write_items(
                TransactItems=[
                    {"Put": put},
                    {"Put": {"TableName": self.table_name, "Item": registry_item(tenant, revision, now)}},
                ]
            )
        except self._errors as exc:
            if _condition_failed(exc):
                raise ConflictError(f"{tenant}: {STALE}") from None
            raise StoreError(f"cannot store the config of {tenant!r}: {exc}") from exc
        return StoredConfig(tenant, decoded(text, tenant), revision, now), True

    def get(self, tenant: str, *, consistent: bool = False) -> StoredConfig | None:
        """One GetItem (half a read unit per 4 KB eventually consistent, one when ``consistent``)."""
        try:
            resp = self.client.get_item(
                TableName=self.table_name, Key=_config_key(tenant), ConsistentRead=consistent
            )
        except self._errors as exc:
            raise StoreError(f"cannot read the config of {tenant!r}: {exc}") from exc
        item = resp.get("Item")
        if item is None:
            return None
        try:
            text, revision = item["doc"]["S"], item["revision"]["S"]
            updated = float(item["updated_at"]["N"])
        except (KeyError, TypeError, ValueError):
            raise StoreError(f"stored config of {tenant!r} is malformed") from None
        return StoredConfig(tenant, decoded(text, tenant), revision, updated)

    def delete(self, tenant: str) -> bool:
        """One GetItem, then one TransactWriteItems deleting both items."""
        existed = self.get(tenant, consistent=True) is not None
        try:
            self.client.transact_write_items(
                TransactItems=[
                    {"Delete": {"TableName": self.table_name, "Key": _config_key(tenant)}},
                    {"Delete": {"TableName": self.table_name, "Key": _registry_key(tenant)}},
                ]
            )
        except self._errors as exc:
            raise StoreError(f"cannot delete the config of {tenant!r}: {exc}") from exc
        return existed

    def tenants(self) -> list[str]:
        """One Query of the registry partition, keys only, per 1 MB page (~12,800 tenants)."""
        try:
            items = paginate(
                self.client.query,
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": REGISTRY_PK}},
                ProjectionExpression="sk",
            )
        except self._errors as exc:
            raise StoreError(f"cannot list tenants: {exc}") from exc
        return sorted(it["sk"]["S"] for it in items)
