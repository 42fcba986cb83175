"""Quota buckets on the DynamoDB table: one item ``QUOTA#{key}`` / ``QUOTA`` per bucket holding its
``tat`` (see :mod:`foldgate.store.quotas.base`) and an ``expires_at`` (the table's TTL attribute) a
minute after it, when the bucket is full again and the item means nothing.

A take is one conditional UpdateItem. DynamoDB's expressions add but cannot take a maximum, so the
update has two shapes:

* *restart* (the bucket is full: ``tat`` absent or past): ``SET tat = :now + cost`` if ``tat <= :now``;
* *add* (the bucket is busy): ``SET tat = tat + cost`` if ``:now - 1 s <= tat <= :now + capacity x
  interval - cost``. It commutes, so instances spending one busy key concurrently do not conflict; a
  ``tat`` up to :data:`~foldgate.store.quotas.base.CATCH_UP_S` behind the clock is added to as it is
  (part of the documented bound), so a bucket that refills between two instances' takes does not
  make every other take guess wrong.

The shape is guessed from the ``tat`` this store last saw for the key and whether other instances
moved it since: *add* for a recent ``tat`` or a shared key, *restart* otherwise. A wrong guess fails its
condition, and the failure returns the item as it is (``ReturnValuesOnConditionCheckFailure``), so the
retry is exact: a take costs one write when the guess holds and two when it does not, and an empty
bucket seen by this store costs none. A bucket moved under three takes in a row is as good as empty
for now: nothing is taken, no error.

The serving functions may update items only under ``QUOTA#`` for this (IAM ``dynamodb:LeadingKeys``,
template.yaml ``RequestQuotas``).
"""

from __future__ import annotations

import math
import threading
from typing import Any, Final

from foldgate.errors import StoreError
from foldgate.store.connections import aws_errors, dynamodb_client
from foldgate.store.quotas.base import CATCH_UP_S, EXPIRY_MARGIN_S, Bucket, QuotaStore, Taken, portion

__all__ = ["QUOTA_PREFIX", "DynamoQuotaStore"]

QUOTA_PREFIX: Final = "QUOTA#"
_SK: Final = "QUOTA"
# Guesses corrected by a failed condition; each correction is exact, so a third try is another
# instance's race won twice in a row, and a fourth is not worth holding the request for.
_ATTEMPTS: Final = 3
# At most this many keys' last seen tat are remembered (an evicted key's next take guesses "full").
_MAX_SEEN: Final = 10_000
# Float slack when telling another instance's take from this one's own in a returned tat.
_EPSILON: Final = 1e-6


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
        # key -> (the tat this store last saw, whether another instance had moved it): the guess of
        # which update shape applies.
        self._seen: dict[str, tuple[float | None, bool]] = {}
        self._seen_lock = threading.Lock()  # takes of different keys run on several threads

    def take(self, key: str, want: int, bucket: Bucket, now: float, *, least: int = 1) -> Taken:
        """One conditional UpdateItem when the guess holds; a failed condition corrects it."""
        want = max(1, min(want, bucket.capacity))
        with self._seen_lock:
            tat, shared = self._seen.get(key, (None, False))
        add = tat is not None and (shared or tat >= now - CATCH_UP_S)
        moved = False
        for _ in range(_ATTEMPTS):
            granted = portion(want, least, bucket.available(tat, now))
            if granted == 0:
                # tat only grows while its item lives, so a bucket seen short is at least as short now.
                assert tat is not None  # no record is a full bucket, and least <= want <= capacity
                self._remember(key, tat, moved or shared)
                return Taken(0, tat)
            ok, found = self._update(key, granted, bucket, now, add)
            if ok:
                assert found is not None
                # More than this take added: another instance took since this store last looked.
                moved = moved or (
                    add and tat is not None and found > tat + granted * bucket.interval + _EPSILON
                )
                self._remember(key, found, moved)
                return Taken(granted, found)
            moved = moved or found != tat
            tat = found  # exact from here on
            add = tat is not None and tat > now
        self._remember(key, tat, True)
        # Other instances moved the bucket under every attempt: it is that busy, so nothing is taken
        # this time (the caller waits for it to refill as for an empty one).
        return Taken(0, tat if tat is not None else now)

    def _update(
        self, key: str, granted: int, bucket: Bucket, now: float, add: bool
    ) -> tuple[bool, float | None]:
        """(whether the take was written, the tat after it or, on a failed condition, as found)."""
        cost = granted * bucket.interval
        ceiling = now + bucket.capacity * bucket.interval
        names = {"#t": "tat", "#e": "expires_at"}
        values = {":exp": {"N": str(math.ceil(ceiling) + EXPIRY_MARGIN_S)}}
        if add:
            update = "SET #t = #t + :cost, #e = :exp"
            condition = "#t >= :floor AND #t <= :top"
            values[":cost"] = _n(cost)
            values[":floor"] = _n(now - CATCH_UP_S)
            values[":top"] = _n(ceiling - cost)
        else:
            update = "SET #t = :new, #e = :exp"
            condition = "attribute_not_exists(#t) OR #t <= :now"
            values[":now"] = _n(now)
            values[":new"] = _n(now + cost)
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

    def _remember(self, key: str, tat: float | None, shared: bool) -> None:
        with self._seen_lock:
            self._seen.pop(key, None)
            self._seen[key] = (tat, shared)
            if len(self._seen) > _MAX_SEEN:
                del self._seen[next(iter(self._seen))]


def _tat(item: dict[str, Any] | None) -> float | None:
    """The item's tat; None when there is no item or no readable tat (taken as a full bucket: the
    conditions then check the item as it really is)."""
    try:
        return float(item["tat"]["N"]) if item else None
    except (KeyError, TypeError, ValueError):
        return None
