"""Quota buckets on the DynamoDB table: one item ``QUOTA#{key}`` / ``QUOTA`` per bucket holding its
``tat`` (see :mod:`foldgate.store.quotas.base`) and an ``expires_at`` (the table's TTL attribute) a
minute after it, when the bucket is full again and the item means nothing.

A take is one conditional UpdateItem. DynamoDB's expressions add but cannot take a maximum, so the
update has two shapes, picked from the ``tat`` this store last saw for the key:

* the bucket is full (``tat`` absent or past): ``SET tat = :now + cost`` if ``tat <= :now``;
* the bucket is draining: ``SET tat = tat + cost`` if ``:now < tat <= :now + capacity*interval - cost``.

The second shape commutes, so instances spending one busy key concurrently do not conflict. A guess
that turns out wrong (another instance moved ``tat``) fails its condition, and the failure returns the
item as it is (``ReturnValuesOnConditionCheckFailure``), so the retry is exact: a take costs one write
when the guess holds and two when it does not, and an empty bucket seen by this store costs none. A
bucket moved under three takes in a row is as good as empty for now: nothing is taken, no error.

The serving functions may update items only under ``QUOTA#`` for this (IAM ``dynamodb:LeadingKeys``,
template.yaml ``RequestQuotas``).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Final

from foldgate.errors import StoreError
from foldgate.store.connections import aws_errors, dynamodb_client
from foldgate.store.quotas.base import EXPIRY_MARGIN_S, Bucket, QuotaStore, Taken, portion

__all__ = ["QUOTA_PREFIX", "DynamoQuotaStore"]

QUOTA_PREFIX: Final = "QUOTA#"
_SK: Final = "QUOTA"
# Guesses corrected by a failed condition; each correction is exact, so a third try is another
# instance's race won twice in a row, and a fourth is not worth holding the request for.
_ATTEMPTS: Final = 3
# At most this many keys' last seen tat are remembered (an evicted key's next take guesses "full").
_MAX_SEEN: Final = 10_000


def _key(key: str) -> dict[str, Any]:
    return {"pk": {"S": f"{QUOTA_PREFIX}{key}"}, "sk": {"S": _SK}}


def _n(value: float) -> dict[str, str]:
    return {"N": repr(round(value, 6))}


class DynamoQuotaStore(QuotaStore):
    """Quota buckets on the catalog table; ``client`` is a low-level dynamodb client (lazily made)."""

    def __init__(self, table_name: str, *, client: Any | None = None) -> None:
        self.table_name = table_name
        self.client = client if client is not None else dynamodb_client()
        self._errors = aws_errors()
        # key -> the tat this store last saw: the guess of which update shape applies.
        self._seen: dict[str, float | None] = {}
        self._seen_lock = threading.Lock()  # takes of different keys run on several threads

    def take(self, key: str, want: int, bucket: Bucket, now: float, *, least: int = 1) -> Taken:
        """One conditional UpdateItem when the guess holds; a failed condition corrects it."""
        want = max(1, min(want, bucket.capacity))
        with self._seen_lock:
            tat = self._seen.get(key)
        for _ in range(_ATTEMPTS):
            granted = portion(want, least, bucket.available(tat, now))
            if granted == 0:
                # tat only grows while its item lives, so a bucket seen short is at least as short now.
                assert tat is not None  # no record is a full bucket, and least <= want <= capacity
                return Taken(0, tat)
            ok, tat = self._update(key, granted, bucket, now, tat)
            if ok:
                assert tat is not None
                self._remember(key, tat)
                return Taken(granted, tat)
            self._remember(key, tat)
        # Other instances moved the bucket under every attempt: it is that busy, so nothing is taken
        # this time (the caller waits for it to refill as for an empty one).
        return Taken(0, tat if tat is not None else now)

    def _update(
        self, key: str, granted: int, bucket: Bucket, now: float, tat: float | None
    ) -> tuple[bool, float | None]:
        """(whether the take was written, the tat after it or, on a failed condition, as found)."""
        cost = granted * bucket.interval
        ceiling = now + bucket.capacity * bucket.interval
        names = {"#t": "tat", "#e": "expires_at"}
        values = {":now": _n(now), ":exp": {"N": str(math.ceil(ceiling) + EXPIRY_MARGIN_S)}}
        if tat is None or tat <= now:
            update = "SET #t = :new, #e = :exp"
            condition = "attribute_not_exists(#t) OR #t <= :now"
            values[":new"] = _n(now + cost)
        else:
            update = "SET #t = #t + :cost, #e = :exp"
            condition = "#t > :now AND #t <= :top"
            values[":cost"] = _n(cost)
            values[":top"] = _n(ceiling - cost)
        try:
            resp = self.client.update_item(
                TableName=self.table_name,
                Key=_key(key),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
                ReturnValues="UPDATED_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except self._errors as exc:
            response = getattr(exc, "response", {})
            if response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                found = response.get("Item")
                if found is not None and _tat(found) is None:
                    # No condition holds on it, and guessing would refuse the key forever: say so.
                    raise StoreError(f"quota {key!r} has an unreadable record") from exc
                return False, _tat(found)
            raise StoreError(f"cannot take from a request quota: {exc}") from exc
        return True, _tat(resp.get("Attributes"))

    def _remember(self, key: str, tat: float | None) -> None:
        with self._seen_lock:
            self._seen.pop(key, None)
            self._seen[key] = tat
            if len(self._seen) > _MAX_SEEN:
                del self._seen[next(iter(self._seen))]


def _tat(item: dict[str, Any] | None) -> float | None:
    """The item's tat; None when there is no item or no readable tat (taken as a full bucket: the
    conditions then check the item as it really is)."""
    try:
        return float(item["tat"]["N"]) if item else None
    except (KeyError, TypeError, ValueError):
        return None
