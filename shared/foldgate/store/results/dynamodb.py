"""Oversized tool results in the DynamoDB table (the cloud's ``read_cache`` backing).

Items ``RESULT#{key}`` / ``PART#{i:04d}``: ``data`` is a slice of the zlib-compressed text (a result of
any size fits: parts of at most 350 KB), part 0 also carries ``stamp`` and ``parts``; every part carries
the TTL attribute ``expires_at``, so DynamoDB deletes them, and reads ignore them once expired.
The MCP function may only write items whose key starts with ``RESULT#`` (template.yaml).
"""

from __future__ import annotations

import time
import zlib
from typing import Any

from foldgate.errors import StoreError
from foldgate.store.connections import aws_errors, dynamodb_client, paginate
from foldgate.store.results.base import CachedResult, ResultStore

__all__ = ["DynamoResultStore"]

_PART_BYTES = 350_000


class DynamoResultStore(ResultStore):
    """Results on the catalog table; ``client`` is a low-level dynamodb client (lazily made)."""

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else dynamodb_client()
        self._errors = aws_errors()

    def put(self, key: str, result: CachedResult) -> None:
        """Write every part (a result is rarely more than one)."""
        blob = zlib.compress(result.text.encode("utf-8"), 6)
        parts = [blob[i : i + _PART_BYTES] for i in range(0, len(blob), _PART_BYTES)] or [b""]
        expires = {"N": str(int(result.expires_at))}
        try:
            for i, data in enumerate(parts):
                item: dict[str, Any] = {
                    "pk": {"S": f"RESULT#{key}"},
                    "sk": {"S": f"PART#{i:04d}"},
                    "data": {"B": data},
                    "expires_at": expires,
                }
                if i == 0:
                    item |= {"stamp": {"S": result.stamp}, "parts": {"N": str(len(parts))}}
                self.client.put_item(TableName=self.table_name, Item=item)
        except self._errors as exc:
            raise StoreError(f"cannot cache a tool result: {exc}") from exc

    def get(self, key: str) -> CachedResult | None:
        """The result, None when absent, incomplete or expired."""
        try:
            items = paginate(
                self.client.query,
                TableName=self.table_name,
                KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": f"RESULT#{key}"}},
                ConsistentRead=True,
            )
        except self._errors as exc:
            raise StoreError(f"cannot read a cached tool result: {exc}") from exc
        if not items or "stamp" not in items[0]:
            return None
        expires_at = float(items[0]["expires_at"]["N"])
        if expires_at < time.time() or len(items) != int(items[0]["parts"]["N"]):
            return None
        blob = b"".join(bytes(it["data"]["B"]) for it in items)
        try:
            text = zlib.decompress(blob).decode("utf-8")
        except (zlib.error, UnicodeDecodeError) as exc:
            raise StoreError(f"cached tool result {key[:6]}... is corrupt: {exc}") from exc
        return CachedResult(items[0]["stamp"]["S"], text, expires_at)
