"""DynamoDB's size and capacity rules applied to the calls a process makes (for the storage and cost
benches): moto_server answers the calls but does not bill them, so the units are counted here from
the items themselves, as DynamoDB counts them.

Rules (Amazon DynamoDB Developer Guide, "Item sizes and formats" and "Read/write capacity mode"):
an item's size is the sum of its attribute names' UTF-8 lengths and their values' sizes (string:
UTF-8 length; binary: its length; number: about one byte per two significant digits plus one; bool
and null: 1; list and map: 3 bytes plus their members, plus 1 per member); storage is billed on the
item size plus 100 bytes of index overhead per item. A read costs one read request unit per 4 KB
(rounded up; half for an eventually consistent read; a Query rounds the sum of the items it read);
a write one write request unit per 1 KB of the larger of the item before and after; a transaction
twice that.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

__all__ = ["STORAGE_OVERHEAD", "CapacityMeter", "attribute_bytes", "item_bytes"]

STORAGE_OVERHEAD = 100


def _number_bytes(text: str) -> int:
    digits = text.lstrip("+-").replace(".", "").lstrip("0").rstrip("0") or "0"
    return min(21, (len(digits) + 1) // 2 + 1)


def attribute_bytes(value: dict[str, Any]) -> int:
    """The size of one attribute value in the low-level wire form (``{"S": ...}``, ``{"N": ...}``)."""
    (kind, v), *_ = value.items()
    if kind == "S":
        return len(v.encode("utf-8"))
    if kind == "B":
        return len(v)
    if kind == "N":
        return _number_bytes(v)
    if kind in ("BOOL", "NULL"):
        return 1
    if kind == "SS":
        return sum(len(x.encode("utf-8")) for x in v)
    if kind == "NS":
        return sum(_number_bytes(x) for x in v)
    if kind == "BS":
        return sum(len(x) for x in v)
    if kind == "L":
        return 3 + sum(attribute_bytes(x) + 1 for x in v)
    if kind == "M":
        return 3 + sum(len(k.encode("utf-8")) + attribute_bytes(x) + 1 for k, x in v.items())
    raise ValueError(f"unknown attribute type {kind!r}")


def item_bytes(item: dict[str, Any]) -> int:
    """An item's size by DynamoDB's rules (names plus values; no storage overhead)."""
    return sum(len(name.encode("utf-8")) + attribute_bytes(v) for name, v in item.items())


def _key_of(item: dict[str, Any]) -> tuple[str, str]:
    return (item["pk"]["S"], item["sk"]["S"])


@dataclass
class CapacityMeter:
    """Counts calls, read and write request units of one boto3 DynamoDB client's calls (hooked with
    :meth:`attach`). Item sizes seen in writes and reads are remembered by key, so an UpdateItem or a
    DeleteItem is charged by the size of the item it changes."""

    calls: Counter[str] = field(default_factory=Counter)
    rru: float = 0.0
    wru: float = 0.0
    sizes: dict[tuple[str, str], int] = field(default_factory=dict)

    def attach(self, client: Any) -> None:
        """Count every later call of ``client``."""
        client.meta.events.register("provide-client-params.dynamodb.*", self._before)
        client.meta.events.register("after-call.dynamodb.*", self._after)

    def reset(self) -> None:
        """Start counting from zero (item sizes are kept)."""
        self.calls.clear()
        self.rru = self.wru = 0.0

    def snapshot(self) -> dict[str, Any]:
        """The counts so far."""
        return {"calls": dict(self.calls), "rru": round(self.rru, 1), "wru": round(self.wru, 1)}

    def _read(self, items: list[dict[str, Any]], consistent: bool) -> None:
        total = 0
        for item in items:
            size = item_bytes(item)
            total += size
            if "pk" in item and "sk" in item:
                self.sizes[_key_of(item)] = size
        self.rru += math.ceil(max(total, 1) / 4096) * (1.0 if consistent else 0.5)

    def _write(self, item: dict[str, Any] | None, key: dict[str, Any] | None, factor: float) -> None:
        k = _key_of(item or key or {})
        before = self.sizes.get(k, 0)
        after = item_bytes(item) if item is not None else before
        if item is not None:
            self.sizes[k] = after
        self.wru += math.ceil(max(before, after, 1) / 1024) * factor

    @staticmethod
    def _before(params: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        # after-call sees the response only: the request's parameters travel in the call's context.
        context["capacity_meter_params"] = dict(params)

    def _after(self, model: Any, parsed: dict[str, Any], context: dict[str, Any], **_: Any) -> None:
        params: dict[str, Any] = context.get("capacity_meter_params", {})
        op = model.name
        self.calls[op] += 1
        consistent = bool(params.get("ConsistentRead"))
        if op == "GetItem":
            self._read([parsed["Item"]] if "Item" in parsed else [], consistent)
        elif op in ("Query", "Scan"):
            self._read(parsed.get("Items", []), consistent)
        elif op == "BatchGetItem":
            for items in parsed.get("Responses", {}).values():
                for item in items:
                    self._read([item], consistent)
        elif op == "PutItem":
            self._write(params["Item"], None, 1.0)
        elif op in ("UpdateItem", "DeleteItem"):
            self._write(None, params["Key"], 1.0)
        elif op == "BatchWriteItem":
            for requests in params["RequestItems"].values():
                for r in requests:
                    if "PutRequest" in r:
                        self._write(r["PutRequest"]["Item"], None, 1.0)
                    else:
                        self._write(None, r["DeleteRequest"]["Key"], 1.0)
        elif op == "TransactWriteItems":
            for action in params["TransactItems"]:
                body = next(iter(action.values()))
                self._write(body.get("Item"), body.get("Key"), 2.0)
