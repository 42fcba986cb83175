"""DynamoSignOutStore's items on the table template.yaml deploys (moto_server): one item per session
under the ``SIGNOUT#`` partition the MCP function's IAM LeadingKeys allow, expiring through the table's
TTL attribute at the session's own expiry."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from foldgate.app.wiring import open_signouts
from foldgate.config.settings import Settings
from foldgate.errors import StoreError
from foldgate.store.signouts.dynamodb import SIGNOUT_PREFIX, DynamoSignOutStore

SID = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def client(moto_endpoint: str) -> Any:
    return boto3.client("dynamodb")


def test_one_item_per_session_whose_ttl_is_the_sessions_expiry(client: Any, dynamo_table: str) -> None:
    DynamoSignOutStore(dynamo_table).sign_out(SID, 4_000_000_000.25)
    [item] = client.scan(TableName=dynamo_table)["Items"]
    assert item == {
        "pk": {"S": f"{SIGNOUT_PREFIX}{SID}"},
        "sk": {"S": "SIGNOUT"},
        "expires_at": {"N": "4000000001"},
    }
    ttl = client.describe_time_to_live(TableName=dynamo_table)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "expires_at"


def test_sign_out_is_one_update_and_the_check_one_consistent_get(client: Any, dynamo_table: str) -> None:
    """The calls template.yaml grants (ConsoleSignOut: UpdateItem on SIGNOUT#; CatalogRead: GetItem)."""
    store = DynamoSignOutStore(dynamo_table)
    calls: list[tuple[str, dict[str, Any]]] = []
    store.client.meta.events.register(
        "provide-client-params.dynamodb.*",
        lambda params, event_name, **_: calls.append((event_name.rsplit(".", 1)[-1], params)),
    )
    store.sign_out(SID, 4_000_000_000)
    store.sign_out(SID, 4_000_000_000)  # again: refused by the condition, not an error
    assert store.signed_out(SID)
    assert [name for name, _ in calls] == ["UpdateItem", "UpdateItem", "GetItem"]
    assert all(p["Key"]["pk"] == {"S": f"{SIGNOUT_PREFIX}{SID}"} for _, p in calls)
    assert calls[-1][1]["ConsistentRead"] is True


def test_a_record_without_a_readable_expiry_still_refuses_the_session(client: Any, dynamo_table: str) -> None:
    client.put_item(
        TableName=dynamo_table, Item={"pk": {"S": f"{SIGNOUT_PREFIX}{SID}"}, "sk": {"S": "SIGNOUT"}}
    )
    assert DynamoSignOutStore(dynamo_table).signed_out(SID)


def test_an_unreachable_table_is_a_store_error_not_a_session(moto_endpoint: str) -> None:
    store = DynamoSignOutStore("no-such-table")
    with pytest.raises(StoreError):
        store.signed_out(SID)
    with pytest.raises(StoreError):
        store.sign_out(SID, 4_000_000_000)


def test_the_cloud_wiring_keeps_sign_outs_on_the_catalog_table(dynamo_table: str) -> None:
    store = open_signouts(Settings(store="dynamodb", table_name=dynamo_table))
    assert isinstance(store, DynamoSignOutStore)
    store.sign_out(SID, 4_000_000_000)
    assert DynamoSignOutStore(dynamo_table).signed_out(SID)
