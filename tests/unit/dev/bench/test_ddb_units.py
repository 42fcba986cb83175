"""DynamoDB's size and capacity rules as the storage bench applies them: item sizes per the Developer
Guide's examples, reads rounded per 4 KB (half when eventually consistent), writes per 1 KB of the
larger of before and after, transactions doubled, an update charged by the item it changes."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.dev.bench.ddb_units import CapacityMeter, attribute_bytes, item_bytes


@pytest.mark.parametrize(
    ("value", "size"),
    [
        ({"S": "héllo"}, 6),  # UTF-8 bytes
        ({"B": b"\x00" * 10}, 10),
        ({"N": "12345"}, 4),  # 5 significant digits: 3 + 1
        ({"N": "-0.00100"}, 2),  # leading and trailing zeros are not significant
        ({"N": "1" * 38}, 20),
        ({"BOOL": True}, 1),
        ({"NULL": True}, 1),
        ({"L": [{"S": "ab"}, {"N": "1"}]}, 3 + (2 + 1) + (2 + 1)),
        ({"M": {"k": {"S": "v"}}}, 3 + 1 + 1 + 1),
    ],
)
def test_attribute_sizes_follow_dynamodbs_rules(value: dict[str, Any], size: int) -> None:
    assert attribute_bytes(value) == size


def test_an_items_size_is_its_names_and_values() -> None:
    assert item_bytes({"pk": {"S": "TENANT#a"}, "sk": {"S": "CONFIG"}}) == 2 + 8 + 2 + 6


class _Model:
    def __init__(self, name: str) -> None:
        self.name = name


def _call(meter: CapacityMeter, op: str, params: dict[str, Any], parsed: dict[str, Any]) -> None:
    context: dict[str, Any] = {}
    meter._before(params=params, context=context)
    meter._after(model=_Model(op), parsed=parsed, context=context)


def _item(sk: str, size: int) -> dict[str, Any]:
    return {"pk": {"S": "P"}, "sk": {"S": sk}, "d": {"B": b"x" * (size - 1 - 2 - len(sk) - 2 - 1)}}


def test_reads_round_per_4kb_and_halve_when_eventually_consistent() -> None:
    meter = CapacityMeter()
    big = _item("a", 9000)
    assert item_bytes(big) == 9000
    _call(meter, "GetItem", {"ConsistentRead": True}, {"Item": big})
    assert meter.rru == 3
    _call(meter, "GetItem", {}, {"Item": big})
    assert meter.rru == 4.5
    _call(meter, "Query", {}, {"Items": [_item("b", 3000), _item("c", 3000)]})  # 6,000 B together: 2 units
    assert meter.rru == 5.5


def test_writes_round_per_kb_transactions_double_and_updates_cost_the_item_they_change() -> None:
    meter = CapacityMeter()
    chunk = _item("chunk", 350_000)
    _call(meter, "BatchWriteItem", {"RequestItems": {"t": [{"PutRequest": {"Item": chunk}}]}}, {})
    assert meter.wru == 342  # ceil(350,000 / 1,024)
    _call(meter, "UpdateItem", {"Key": {"pk": {"S": "P"}, "sk": {"S": "chunk"}}}, {})
    assert meter.wru == 684  # marking a big item with a TTL costs its whole size
    _call(meter, "TransactWriteItems", {"TransactItems": [{"Put": {"Item": _item("p", 500)}}]}, {})
    assert meter.wru == 686
    assert meter.calls == {"BatchWriteItem": 1, "UpdateItem": 1, "TransactWriteItems": 1}
