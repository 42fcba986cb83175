"""DynamoApprovalStore's items on the table template.yaml deploys (moto_server): rejections live in the
tenant's ``APPROVAL#`` partition (the MCP function's IAM LeadingKeys) under a ``#rejected#`` sort-key
prefix no tool key can have, and approving deletes only rejections that exist."""

from __future__ import annotations

from typing import Any

import boto3
import pytest

from foldgate.store.approvals.dynamodb import DynamoApprovalStore


@pytest.fixture
def client(moto_endpoint: str) -> Any:
    return boto3.client("dynamodb")


def items(client: Any, table: str) -> dict[tuple[str, str], dict[str, Any]]:
    found = client.scan(TableName=table)["Items"]
    return {(it["pk"]["S"], it["sk"]["S"]): it for it in found}


def test_rejections_are_items_of_the_approval_partition(client: Any, dynamo_table: str) -> None:
    store = DynamoApprovalStore(dynamo_table)
    store.approve("acme", {"crm:find": "a" * 64})
    store.reject("acme", {"crm:find": "b" * 64})
    stored = items(client, dynamo_table)
    assert set(stored) == {("APPROVAL#acme", "crm:find"), ("APPROVAL#acme", "#rejected#crm:find")}
    rejection = stored[("APPROVAL#acme", "#rejected#crm:find")]
    assert rejection["hash"] == {"S": "b" * 64}
    assert "rejected_at" in rejection


def test_approving_deletes_only_existing_rejections(client: Any, dynamo_table: str) -> None:
    store = DynamoApprovalStore(dynamo_table)
    store.reject("acme", {"crm:find": "b" * 64})
    writes: list[dict[str, Any]] = []
    store.client.meta.events.register(
        "provide-client-params.dynamodb.BatchWriteItem", lambda params, **_: writes.append(params)
    )
    store.approve("acme", {"crm:find": "a" * 64, "crm:add": "c" * 64})
    requests = [r for w in writes for r in w["RequestItems"][dynamo_table]]
    deletes = [r["DeleteRequest"]["Key"]["sk"]["S"] for r in requests if "DeleteRequest" in r]
    assert deletes == ["#rejected#crm:find"]  # no blind delete for crm:add
    assert set(items(client, dynamo_table)) == {("APPROVAL#acme", "crm:find"), ("APPROVAL#acme", "crm:add")}
