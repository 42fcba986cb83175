"""DynamoTokenStore's items on the table template.yaml deploys (moto_server): keys, TTL, no digest leaks."""

from __future__ import annotations

import math
from typing import Any

import boto3
import pytest

from foldgate.app.wiring import open_token_store
from foldgate.config.settings import Settings
from foldgate.errors import StoreError
from foldgate.model.agent_token import AgentToken
from foldgate.store.tokens.dynamodb import DynamoTokenStore


@pytest.fixture
def client(moto_endpoint: str) -> Any:
    return boto3.client("dynamodb")


def raw(client: Any, table: str, token_id: str) -> dict[str, Any]:
    item: dict[str, Any] = client.get_item(
        TableName=table, Key={"pk": {"S": f"TOKEN#{token_id}"}, "sk": {"S": "TOKEN"}}
    )["Item"]
    return item


def test_item_layout_and_ttl(client: Any, dynamo_table: str) -> None:
    store = DynamoTokenStore(dynamo_table)
    expiring = AgentToken("00000000000000e1", "acme", ("github",), "write", 5000.5, "ci", 1000.0)
    forever = AgentToken("00000000000000e2", "acme", None, "read", None, None, 1000.0)
    store.put(expiring, "a" * 64)
    store.put(forever, "b" * 64)
    item = raw(client, dynamo_table, expiring.token_id)
    assert item["digest"] == {"S": "a" * 64}
    assert item["valid_until"] == {"N": "5000.5"}
    # The table's TTL attribute: one day after the token's own expiry, whole seconds.
    assert item["expires_at"] == {"N": str(math.ceil(5000.5) + 86400)}
    assert item["servers"] == {"L": [{"S": "github"}]}
    item = raw(client, dynamo_table, forever.token_id)
    assert "expires_at" not in item  # a token without expiry is never deleted by TTL
    assert "servers" not in item
    assert "label" not in item


def test_list_skips_other_items_and_never_reads_digests(client: Any, dynamo_table: str) -> None:
    store = DynamoTokenStore(dynamo_table)
    store.put(AgentToken("00000000000000f1", "acme", None, "read", None), "c" * 64)
    # Items of other features on the same table must not be mistaken for tokens.
    client.put_item(
        TableName=dynamo_table,
        Item={"pk": {"S": "TENANT#acme"}, "sk": {"S": "CURRENT"}, "tenant": {"S": "acme"}},
    )
    client.put_item(TableName=dynamo_table, Item={"pk": {"S": "RESULT#k"}, "sk": {"S": "PART#0000"}})
    requests: list[dict[str, Any]] = []
    store.client.meta.events.register(
        "provide-client-params.dynamodb.Scan", lambda params, **_: requests.append(params)
    )
    responses: list[Any] = []
    store.client.meta.events.register(
        "after-call.dynamodb.Scan", lambda parsed, **_: responses.append(parsed)
    )
    assert [t.token_id for t in store.list("acme")] == ["00000000000000f1"]
    assert requests
    assert "digest" not in str(requests[0]["ExpressionAttributeNames"])
    assert "c" * 64 not in str(responses)


def test_list_follows_pages(client: Any, dynamo_table: str) -> None:
    store = DynamoTokenStore(dynamo_table)
    for i in range(30):
        store.put(AgentToken(f"{i:016x}", "acme", None, "read", None, created_at=float(i)), "d" * 64)
    calls: list[int] = []

    def small_pages(params: dict[str, Any], **_: Any) -> None:
        params["Limit"] = 7
        calls.append(1)

    store.client.meta.events.register("provide-client-params.dynamodb.Scan", small_pages)
    assert [t.token_id for t in store.list()] == [f"{i:016x}" for i in range(30)]
    assert len(calls) > 1


def test_open_token_store_picks_dynamodb(dynamo_table: str) -> None:
    store = open_token_store(Settings(store="dynamodb", table_name=dynamo_table))
    assert isinstance(store, DynamoTokenStore)
    assert store.list() == []


def test_aws_errors_become_store_errors(moto_endpoint: str) -> None:
    store = DynamoTokenStore("no-such-table")
    token = AgentToken("00000000000000aa", "acme", None, "read", None)
    with pytest.raises(StoreError, match="ResourceNotFoundException"):
        store.get(token.token_id)
    with pytest.raises(StoreError):
        store.put(token, "e" * 64)
    with pytest.raises(StoreError):
        store.list()
    with pytest.raises(StoreError):
        store.revoke(token.token_id)


def test_touch_names_only_the_attributes_the_serving_functions_may_write(
    client: Any, dynamo_table: str
) -> None:
    from tests.unit.test_template_token_use import LAST_USE_ATTRIBUTES

    sent: list[dict[str, Any]] = []

    class Recording:
        """The real moto_server client, keeping what each UpdateItem named."""

        def __getattr__(self, name: str) -> Any:
            return getattr(client, name)

        def update_item(self, **kwargs: Any) -> Any:
            sent.append(kwargs)
            return client.update_item(**kwargs)

    store = DynamoTokenStore(dynamo_table, client=Recording())
    store.put(AgentToken("00000000000000e7", "acme", None, "read", None, None, 1000.0), "c" * 64)
    store.touch("00000000000000e7", 2000.0)
    store.touch("00000000000000e7", 1500.0)  # refused by its condition, not an error
    [first, _] = sent
    named = set(first["Key"]) | set(first["ExpressionAttributeNames"].values())
    assert named <= set(LAST_USE_ATTRIBUTES)
    assert first.get("ReturnValues", "NONE") == "NONE"
    assert raw(client, dynamo_table, "00000000000000e7")["last_used_at"] == {"N": "2000.0"}
