"""Approved tool versions on the DynamoDB table: items ``APPROVAL#{tenant}`` / ``{server:tool}`` with
the approved ``hash``, and rejections ``APPROVAL#{tenant}`` / ``#rejected#{server:tool}`` with the
rejected ``hash``. A partition of their own, so the MCP function's admin API may write approvals
(IAM ``dynamodb:LeadingKeys`` ``APPROVAL#*``, PutItem and BatchWriteItem) without any right on catalog
items. Keys start with a server name, which never contains ``#``, so no key reads as a rejection."""

from __future__ import annotations

import time
from typing import Any

from foldgate.errors import StoreError
from foldgate.store.approvals.base import ApprovalStore
from foldgate.store.connections import aws_errors, dynamodb_client, paginate

__all__ = ["DynamoApprovalStore"]

_BATCH = 25
_REJECTED = "#rejected#"


class DynamoApprovalStore(ApprovalStore):
    """Approvals on the catalog table; ``client`` is a low-level dynamodb client (lazily made)."""

    attempts = 8

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else dynamodb_client()
        self._errors = aws_errors()

    def _query(self, tenant: str, *, rejections: bool) -> list[dict[str, Any]]:
        """The tenant's partition (one paginated Query); only its rejections when asked."""
        condition, values = "pk = :pk", {":pk": {"S": f"APPROVAL#{tenant}"}}
        if rejections:
            condition, values = f"{condition} AND begins_with(sk, :r)", {**values, ":r": {"S": _REJECTED}}
        try:
            return paginate(
                self.client.query,
                TableName=self.table_name,
                KeyConditionExpression=condition,
                ExpressionAttributeValues=values,
                ConsistentRead=True,
            )
        except self._errors as exc:
            raise StoreError(f"cannot read approvals of {tenant!r}: {exc}") from exc

    def approved(self, tenant: str) -> dict[str, str]:
        """Every approved tool of the tenant (the partition less its rejections)."""
        items = self._query(tenant, rejections=False)
        return {it["sk"]["S"]: it["hash"]["S"] for it in items if not it["sk"]["S"].startswith(_REJECTED)}

    def rejected(self, tenant: str) -> dict[str, str]:
        """Every rejected tool of the tenant (one Query on the rejections' sort-key prefix)."""
        items = self._query(tenant, rejections=True)
        return {it["sk"]["S"].removeprefix(_REJECTED): it["hash"]["S"] for it in items}

    def approve(self, tenant: str, hashes: dict[str, str]) -> None:
        """Put the approvals and delete the same tools' rejections (BatchWriteItem). Only rejections
        that exist are deleted: a first index's baseline approves every tool of a trusted server, and
        blind deletes would double its writes."""
        pk = {"S": f"APPROVAL#{tenant}"}
        now = {"N": str(int(time.time()))}
        requests = [
            {"PutRequest": {"Item": {"pk": pk, "sk": {"S": key}, "hash": {"S": h}, "approved_at": now}}}
            for key, h in hashes.items()
        ]
        stale = hashes.keys() & self.rejected(tenant).keys()
        requests += [
            {"DeleteRequest": {"Key": {"pk": pk, "sk": {"S": _REJECTED + key}}}} for key in sorted(stale)
        ]
        self._write(tenant, requests, "approvals")

    def reject(self, tenant: str, hashes: dict[str, str]) -> None:
        """Put the rejections (BatchWriteItem); approvals are separate items and stay."""
        pk = {"S": f"APPROVAL#{tenant}"}
        now = {"N": str(int(time.time()))}
        items = [
            {"pk": pk, "sk": {"S": _REJECTED + key}, "hash": {"S": h}, "rejected_at": now}
            for key, h in hashes.items()
        ]
        self._write(tenant, [{"PutRequest": {"Item": item}} for item in items], "rejections")

    def _write(self, tenant: str, requests: list[dict[str, Any]], what: str) -> None:
        """BatchWriteItem in 25s, retrying unprocessed items a bounded number of times."""
        try:
            for start in range(0, len(requests), _BATCH):
                batch = requests[start : start + _BATCH]
                for attempt in range(self.attempts):
                    resp = self.client.batch_write_item(RequestItems={self.table_name: batch})
                    batch = resp.get("UnprocessedItems", {}).get(self.table_name, [])
                    if not batch:
                        break
                    time.sleep(min(2.0, 0.05 * 2**attempt))
                if batch:
                    raise StoreError(f"cannot record {what} of {tenant!r}: throttled")
        except self._errors as exc:
            raise StoreError(f"cannot record {what} of {tenant!r}: {exc}") from exc
