"""DynamoQuotaStore on the table template.yaml deploys (moto_server): one item per bucket under the
``QUOTA#`` partition the serving functions' IAM LeadingKeys allow, expiring through the table's TTL a
minute after the bucket is full again; a take is one conditional UpdateItem when this store's guess of
the bucket holds, two when another instance moved it, none once it saw the bucket empty."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from foldgate.errors import StoreError
from foldgate.store.quotas.base import Bucket
from foldgate.store.quotas.dynamodb import QUOTA_PREFIX, DynamoQuotaStore

NOW = 1_800_000_000.0
BUCKET = Bucket(120)  # a token every 0.5 s, six in the bucket


@pytest.fixture
def client(moto_endpoint: str) -> Any:
    return boto3.client("dynamodb")


def _calls(store: DynamoQuotaStore) -> list[tuple[str, dict[str, Any]]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    store.client.meta.events.register(
        "provide-client-params.dynamodb.*",
        lambda params, event_name, **_: calls.append((event_name.rsplit(".", 1)[-1], params)),
    )
    return calls


def test_one_item_per_bucket_expiring_a_minute_after_it_is_full(client: Any, dynamo_table: str) -> None:
    DynamoQuotaStore(dynamo_table).take("acme\x1ftenant", 4, BUCKET, NOW)
    [item] = client.scan(TableName=dynamo_table)["Items"]
    assert item["pk"] == {"S": f"{QUOTA_PREFIX}acme\x1ftenant"}
    assert item["sk"] == {"S": "QUOTA"}
    assert float(item["tat"]["N"]) == NOW + 2.0
    # The TTL attribute lies past any tat a take can leave (now + capacity), plus the margin.
    assert int(item["expires_at"]["N"]) == int(NOW + 3 + 60)
    ttl = client.describe_time_to_live(TableName=dynamo_table)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires_at"


def test_a_take_is_one_conditional_update_while_the_guess_holds(dynamo_table: str) -> None:
    store = DynamoQuotaStore(dynamo_table)
    calls = _calls(store)
    for i in range(3):
        assert store.take("k", 2, BUCKET, NOW + i * 0.01).granted == 2
    assert [name for name, _ in calls] == ["UpdateItem"] * 3
    assert all(p["Key"]["pk"] == {"S": f"{QUOTA_PREFIX}k"} and "ConditionExpression" in p for _, p in calls)


def test_a_bucket_moved_by_another_instance_costs_one_more_update_and_is_exact(dynamo_table: str) -> None:
    here, there = DynamoQuotaStore(dynamo_table), DynamoQuotaStore(dynamo_table)
    assert there.take("k", 4, BUCKET, NOW).granted == 4
    calls = _calls(here)
    # `here` guessed a full bucket; the refused condition returned the real one, and the retry took
    # exactly what was left.
    assert here.take("k", 5, BUCKET, NOW).granted == 2
    assert [name for name, _ in calls] == ["UpdateItem", "UpdateItem"]


def test_a_busy_bucket_is_added_to_in_one_write_even_when_this_store_saw_it_full(dynamo_table: str) -> None:
    here = DynamoQuotaStore(dynamo_table, client=boto3.client("dynamodb"))
    there = DynamoQuotaStore(dynamo_table, client=boto3.client("dynamodb"))
    assert here.take("k", 1, BUCKET, NOW).granted == 1  # tat NOW + 0.5
    assert there.take("k", 2, BUCKET, NOW + 0.8).granted == 2  # tat NOW + 1.8
    calls = _calls(here)
    # `here` last saw the bucket full again by now; the commuting update adds to it as it is.
    taken = here.take("k", 1, BUCKET, NOW + 1.0)
    assert (taken.granted, taken.tat) == (1, NOW + 2.3)
    assert len(calls) == 1
    # A tat at most CATCH_UP_S behind the clock is added to as it is (the bound's one second).
    assert here.take("k", 1, BUCKET, NOW + 3.0).tat == NOW + 2.8
    # Further behind, the bucket restarts from the clock.
    assert here.take("k", 1, BUCKET, NOW + 10.0).tat == NOW + 10.5


def test_a_bucket_seen_empty_costs_no_call_until_it_refills(dynamo_table: str) -> None:
    store = DynamoQuotaStore(dynamo_table)
    assert store.take("k", 6, BUCKET, NOW).granted == 6
    calls = _calls(store)
    assert store.take("k", 1, BUCKET, NOW + 0.1).granted == 0
    assert calls == []
    assert store.take("k", 1, BUCKET, NOW + 0.6).granted == 1
    assert len(calls) == 1


def test_a_bucket_moved_under_every_take_gives_nothing_and_no_error(dynamo_table: str) -> None:
    here = DynamoQuotaStore(dynamo_table, client=boto3.client("dynamodb"))
    there = DynamoQuotaStore(dynamo_table, client=boto3.client("dynamodb"))
    # Before each of `here`'s writes another instance takes just enough to fail its condition.
    races = iter([1, 4, 1])

    def race(**_: Any) -> None:  # a handler's return value would stand in for the call's answer
        there.take("k", next(races), BUCKET, NOW)

    here.client.meta.events.register("before-call.dynamodb.UpdateItem", race)
    taken = here.take("k", 2, BUCKET, NOW)
    assert taken.granted == 0
    assert taken.tat == NOW + 3.0  # the bucket as the last refusal found it: empty
    assert next(races, None) is None  # three writes, each refused


def test_an_unreadable_record_takes_nothing_and_says_so(client: Any, dynamo_table: str) -> None:
    client.put_item(
        TableName=dynamo_table,
        Item={"pk": {"S": f"{QUOTA_PREFIX}k"}, "sk": {"S": "QUOTA"}, "tat": {"S": "garbage"}},
    )
    # Its condition cannot hold on a string: nothing is taken, the store says so (the edge fails open).
    with pytest.raises(StoreError):
        DynamoQuotaStore(dynamo_table).take("k", 1, BUCKET, NOW)


def test_an_unreachable_table_is_a_store_error(moto_endpoint: str) -> None:
    with pytest.raises(StoreError):
        DynamoQuotaStore("no-such-table").take("k", 1, BUCKET, NOW)
