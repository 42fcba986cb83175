"""The activity log on the DynamoDB table (the cloud's backing).

One item per event: ``pk = ACT#{kind}#{tenant}``, ``sk = {event_id}``. Event ids start with the
millisecond (:func:`~foldgate.model.activity.new_event_id`), so a tenant's listing is one Query of its
partition walking the sort key backwards (``ScanIndexForward=false``): newest first with no index to
keep. The kind comes first in the key because it is one of two fixed words: ``ACT#call#a`` can never be
read as another tenant's key (tenant names hold no ``#`` either). Every item carries the table's TTL
attribute ``expires_at`` (its event's time plus the tenant's retention); TTL deletion lags by up to
days, so reads filter on it too.

Filters (server, tool, principal, outcome, the exact time bounds) are a FilterExpression; ``since`` /
``until`` also narrow the key range. DynamoDB applies ``Limit`` before the filter, so one Query of a
page's size could come back nearly empty: a page keeps reading (a few times the page size per call, at
most :data:`MAX_CALLS` calls) until it has ``limit`` matches, and a page cut short by that bound still
carries a cursor, from where the reading stopped, so nothing is skipped or read twice.

Writes are BatchWriteItem calls of 25 (the buffered recorder's batch); items DynamoDB leaves
unprocessed (throttling) are retried a few times with jittered backoff, then the batch is a StoreError
(the recorder counts the loss). The MCP and code functions may write only ``ACT#`` partitions this way
(IAM ``dynamodb:LeadingKeys``, template.yaml).
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Sequence
from typing import Any, Final

from foldgate.errors import StoreError
from foldgate.store.activity.base import ActivityPage, ActivityQuery, ActivityStore, StoredRecord
from foldgate.store.activity.codec import (
    check_query,
    decode_cursor,
    encode_cursor,
    filterable,
    id_bounds,
    kind_of,
    record_from_json,
    record_to_json,
)
from foldgate.store.connections import aws_errors, dynamodb_client

__all__ = ["ACTIVITY_PREFIX", "MAX_CALLS", "DynamoActivityStore", "partition"]

ACTIVITY_PREFIX: Final = "ACT#"
# A page reads at most this many Query pages before answering short (with a cursor).
MAX_CALLS: Final = 8
_BATCH_ITEMS: Final = 25
_FILTERS: Final = ("server", "tool", "principal", "outcome")


def partition(tenant: str, kind: str) -> str:
    """The partition key of a tenant's events of one kind."""
    return f"{ACTIVITY_PREFIX}{kind}#{tenant}"


class DynamoActivityStore(ActivityStore):
    """Events on the catalog table; ``client`` is a low-level dynamodb client (lazily made)."""

    # Bounded retry of UnprocessedItems: the writer is off the request path, but a throttled table must
    # not hold it for long either (events are dropped and counted instead).
    batch_attempts = 4
    backoff_base = 0.05
    backoff_cap = 0.5

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else dynamodb_client()
        self._errors = aws_errors()

    def put_many(self, records: Sequence[StoredRecord]) -> None:
        """BatchWriteItem in 25s (an id twice in one batch is written once)."""
        items: dict[tuple[str, str], dict[str, Any]] = {}
        for stored in records:
            record = stored.record.with_id()
            f = filterable(record)
            pk = partition(record.tenant, kind_of(record))
            items[(pk, record.event_id)] = {
                "pk": {"S": pk},
                "sk": {"S": record.event_id},
                "at": {"N": repr(float(record.at))},
                "expires_at": {"N": str(math.ceil(stored.expires_at))},
                "server": {"S": f.server},
                "tool": {"S": f.tool},
                "principal": {"S": f.principal},
                "outcome": {"S": f.outcome},
                "doc": {"S": record_to_json(record)},
            }
        values = list(items.values())
        for start in range(0, len(values), _BATCH_ITEMS):
            self._write_batch([{"PutRequest": {"Item": it}} for it in values[start : start + _BATCH_ITEMS]])

    def _write_batch(self, batch: list[dict[str, Any]]) -> None:
        attempt = 0
        while batch:
            try:
                resp = self.client.batch_write_item(RequestItems={self.table_name: batch})
            except self._errors as exc:
                raise StoreError(f"cannot write activity events: {exc}") from exc
            batch = resp.get("UnprocessedItems", {}).get(self.table_name, [])
            if not batch:
                return
            attempt += 1
            if attempt >= self.batch_attempts:
                raise StoreError(
                    f"cannot write activity events: DynamoDB left {len(batch)} unprocessed after "
                    f"{attempt} attempts (throttled)"
                )
            time.sleep(random.uniform(0, min(self.backoff_cap, self.backoff_base * 2**attempt)))

    def query(self, query: ActivityQuery) -> ActivityPage:
        """Query the tenant's partition backwards until the page is full (see the module doc)."""
        check_query(query)
        below = decode_cursor(query)
        params = self._params(query)
        if below is not None:
            # Built from the query's own tenant: a cursor only ever says where to resume, never where.
            params["ExclusiveStartKey"] = {
                "pk": params["ExpressionAttributeValues"][":pk"],
                "sk": {"S": below},
            }
        found: list[tuple[str, str]] = []
        resume: str | None = None
        for _ in range(MAX_CALLS):
            try:
                resp = self.client.query(**params)
            except self._errors as exc:
                raise StoreError(f"cannot read activity events: {exc}") from exc
            for item in resp.get("Items", []):
                found.append((item["sk"]["S"], item["doc"]["S"]))
            last = resp.get("LastEvaluatedKey")
            resume = last["sk"]["S"] if last else None
            if len(found) > query.limit or resume is None:
                break
            params["ExclusiveStartKey"] = last
        page = found[: query.limit]
        if len(found) > query.limit:
            cursor: str | None = encode_cursor(query.tenant, query.kind, page[-1][0])
        elif resume is not None:
            cursor = encode_cursor(query.tenant, query.kind, resume)
        else:
            cursor = None
        records = [r for r in (record_from_json(doc) for _, doc in page) if r is not None]
        return ActivityPage(records, cursor)

    def _params(self, query: ActivityQuery) -> dict[str, Any]:
        """The Query's parameters: the partition and key range, the filters, how much each call reads."""
        names: dict[str, str] = {"#x": "expires_at"}
        values: dict[str, Any] = {
            ":pk": {"S": partition(query.tenant, query.kind)},
            ":now": {"N": str(int(time.time()))},
        }
        key = "pk = :pk"
        low, high = id_bounds(query)
        if low is not None and high is not None:
            key += " AND sk BETWEEN :lo AND :hi"  # no id equals a bare millisecond: :hi stays out
        elif low is not None:
            key += " AND sk >= :lo"
        elif high is not None:
            key += " AND sk < :hi"
        if low is not None:
            values[":lo"] = {"S": low}
        if high is not None:
            values[":hi"] = {"S": high}
        filters = ["#x > :now"]
        for name in _FILTERS:
            value = getattr(query, name)
            if value is not None:
                # Through placeholders: DynamoDB reserves hundreds of plain words.
                names[f"#{name}"] = name
                values[f":{name}"] = {"S": value}
                filters.append(f"#{name} = :{name}")
        if query.since is not None:
            names["#at"] = "at"
            values[":since"] = {"N": repr(float(query.since))}
            filters.append("#at >= :since")
        if query.until is not None:
            names["#at"] = "at"
            values[":until"] = {"N": repr(float(query.until))}
            filters.append("#at < :until")
        narrowed = any(getattr(query, n) is not None for n in _FILTERS)
        return {
            "TableName": self.table_name,
            "KeyConditionExpression": key,
            "FilterExpression": " AND ".join(filters),
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            # One more than the page tells whether another page exists; with filters, read ahead
            # (most of what is read may not match) but never more than DynamoDB's 1 MB page anyway.
            "Limit": min(1000, query.limit * 8) if narrowed else query.limit + 1,
        }
