"""DynamoActivityStore's items and calls on the table template.yaml deploys (moto_server): one item per
event in its tenant's ``ACT#`` partition with the table's TTL attribute, written 25 to a BatchWriteItem,
read by Queries that never leave the asking tenant's partition."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import boto3
import pytest

from foldgate.errors import StoreError
from foldgate.model.activity import ActivityEvent
from foldgate.store.activity.base import ActivityQuery, StoredRecord
from foldgate.store.activity.dynamodb import MAX_CALLS, DynamoActivityStore, partition

NOW = time.time()


@pytest.fixture
def client(moto_endpoint: str) -> Any:
    return boto3.client("dynamodb")


def event(i: int, tenant: str = "acme", **fields: Any) -> ActivityEvent:
    at = NOW - 60 + i / 1000
    values: dict[str, Any] = {"tenant": tenant, "method": "tools/call", "surface": "mcp", "outcome": "ok"}
    return ActivityEvent(**(values | {"at": at} | fields), event_id=f"{int(at * 1000):013d}-{i:012x}")


def own_store(table: str) -> DynamoActivityStore:
    """A store on a client of its own: hooks a test registers never reach the process's shared client."""
    return DynamoActivityStore(table, client=boto3.client("dynamodb"))


def capture(store: DynamoActivityStore) -> list[tuple[str, dict[str, Any]]]:
    """Every call the store's client makes, by operation name, with its parameters."""
    calls: list[tuple[str, dict[str, Any]]] = []
    store.client.meta.events.register(
        "provide-client-params.dynamodb.*",
        lambda params, event_name, **_: calls.append((event_name.rsplit(".", 1)[-1], dict(params))),
    )
    return calls


def test_one_item_per_event_in_its_tenants_partition_with_the_ttl_attribute(
    client: Any, dynamo_table: str
) -> None:
    e = event(1, server="github", tool="search", principal="tok_1")
    DynamoActivityStore(dynamo_table).put_many([StoredRecord(e, 4_000_000_000.25)])
    [item] = client.scan(TableName=dynamo_table)["Items"]
    assert item["pk"] == {"S": "ACT#call#acme"}
    assert item["sk"] == {"S": e.event_id}
    assert item["expires_at"] == {"N": "4000000001"}
    assert {k: item[k]["S"] for k in ("server", "tool", "principal", "outcome")} == {
        "server": "github",
        "tool": "search",
        "principal": "tok_1",
        "outcome": "ok",
    }
    ttl = client.describe_time_to_live(TableName=dynamo_table)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires_at"


def test_a_batch_is_written_25_events_to_a_call(dynamo_table: str) -> None:
    store = own_store(dynamo_table)
    calls = capture(store)
    store.put_many([StoredRecord(event(i), NOW + 86_400) for i in range(60)])
    assert [name for name, _ in calls] == ["BatchWriteItem"] * 3
    assert [len(p["RequestItems"][dynamo_table]) for _, p in calls] == [25, 25, 10]
    assert len(store.query(ActivityQuery("acme", limit=100)).records) == 60


def test_items_left_unprocessed_are_retried_then_the_batch_fails(dynamo_table: str) -> None:
    store = own_store(dynamo_table)
    store.backoff_base = store.backoff_cap = 0.0
    attempts: list[int] = []

    def unprocessed(parsed: dict[str, Any], **_: Any) -> None:
        attempts.append(1)
        item = {"pk": {"S": partition("acme", "call")}, "sk": {"S": "0-x"}}
        parsed["UnprocessedItems"] = {dynamo_table: [{"PutRequest": {"Item": item}}]}

    store.client.meta.events.register("after-call.dynamodb.BatchWriteItem", unprocessed)
    with pytest.raises(StoreError, match="unprocessed"):
        store.put_many([StoredRecord(event(1), NOW + 86_400)])
    assert len(attempts) == store.batch_attempts


def test_every_query_stays_in_the_asking_tenants_partition(dynamo_table: str) -> None:
    store = own_store(dynamo_table)
    store.put_many([StoredRecord(event(i, t), NOW + 86_400) for i in range(5) for t in ("acme", "globex")])
    calls = capture(store)
    page = store.query(ActivityQuery("acme", limit=2))
    store.query(ActivityQuery("acme", limit=2, cursor=page.cursor))
    queries = [p for name, p in calls if name == "Query"]
    assert len(queries) == 2
    for params in queries:
        assert params["ExpressionAttributeValues"][":pk"] == {"S": partition("acme", "call")}
    assert queries[1]["ExclusiveStartKey"]["pk"] == {"S": partition("acme", "call")}


def test_a_sparse_filter_reads_a_bounded_number_of_pages_and_resumes_where_it_stopped(
    dynamo_table: str,
) -> None:
    store = own_store(dynamo_table)
    events = [event(i, outcome="denied" if i == 0 else "ok") for i in range(200)]
    store.put_many([StoredRecord(e, NOW + 86_400) for e in events])
    calls = capture(store)
    query = ActivityQuery("acme", outcome="denied", limit=2)  # reads 16 items a call
    page = store.query(query)
    assert page.records == []
    assert page.cursor is not None
    assert len(calls) == MAX_CALLS
    rest = store.query(replace(query, cursor=page.cursor))
    assert [r.event_id for r in rest.records] == [events[0].event_id]


def test_an_unreachable_table_is_a_store_error(moto_endpoint: str) -> None:
    store = DynamoActivityStore("no-such-table")
    with pytest.raises(StoreError):
        store.put_many([StoredRecord(event(1), NOW + 86_400)])
    with pytest.raises(StoreError):
        store.query(ActivityQuery("acme"))
