"""Approved tool versions on the DynamoDB table: items ``APPROVAL#{tenant}`` / ``{server:tool}`` with
the approved ``hash``. A partition of their own, so the MCP function's admin API may write approvals
(IAM ``dynamodb:LeadingKeys`` ``APPROVAL#*``) without any right on catalog items."""

from __future__ import annotations

import time
from typing import Any

from foldgate.errors import StoreError
from foldgate.store.approvals.base import ApprovalStore
from foldgate.store.connections import aws_errors, dynamodb_client, paginate

__all__ = ["DynamoApprovalStore"]

_BATCH = 25


class DynamoApprovalStore(ApprovalStore):
    """Approvals on the catalog table; ``client`` is a low-level dynamodb client (lazily made)."""

    attempts = 8

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else dynamodb_client()
        self._errors = aws_errors()

    def approved(self, tenant: str) -> dict[str, str]:
        """Every approved tool of the tenant (one paginated Query)."""
        try:
            items = paginate(
                self.client.query,
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": f"APPROVAL#{tenant}"}},
                ConsistentRead=True,
            )
        except self._errors as exc:
            raise StoreError(f"cannot read approvals of {tenant!r}: {exc}") from exc
        return {it["sk"]["S"]: it["hash"]["S"] for it in items}

    def approve(self, tenant: str, hashes: dict[str, str]) -> None:
        """BatchWriteItem in 25s, retrying unprocessed items a bounded number of times."""
        now = {"N": str(int(time.time()))}
        requests = [
            {"PutRequest": {"Item": {"pk": {"S": f"APPROVAL#{tenant}"}, "sk": {"S": key}, "hash": {"S": h},
                                     "approved_at": now}}}
            for key, h in hashes.items()
        ]  # fmt: skip
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
                    raise StoreError(f"cannot record approvals of {tenant!r}: throttled")
        except self._errors as exc:
            raise StoreError(f"cannot record approvals of {tenant!r}: {exc}") from exc
