"""template.yaml lets the serving functions write the activity log and nothing more with it: the
BatchWriteItem the DynamoActivityStore calls, on ``ACT#`` partitions only (AdminFunction's operator
events too); the admin API (AdminFunction) reads them with its table-wide Query; items expire through
the table's TTL attribute, the one the store writes."""

from __future__ import annotations

from typing import Any

from foldgate.dev.bench.moto import template_resource
from foldgate.store.activity.dynamodb import ACTIVITY_PREFIX


def _statements(function: str) -> dict[str, dict[str, Any]]:
    statements = template_resource(function)["Properties"]["Policies"][0]["Statement"]
    return {s["Sid"]: s for s in statements}


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def test_the_serving_functions_may_batch_write_only_activity_items() -> None:
    for function in ("McpFunction", "CodeFunction", "AdminFunction"):
        write = _statements(function)["ActivityWrite"]
        assert _actions(write) == ["dynamodb:BatchWriteItem"], function
        keys = write["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]
        assert keys == [f"{ACTIVITY_PREFIX}*"], function


def test_the_admin_api_may_query_the_activity_log() -> None:
    read = _statements("AdminFunction")["CatalogRead"]
    assert "dynamodb:Query" in _actions(read)
    assert "Condition" not in read


def test_activity_items_expire_by_the_tables_ttl_attribute() -> None:
    spec = template_resource("CatalogTable")["Properties"]["TimeToLiveSpecification"]
    assert spec == {"AttributeName": "expires_at", "Enabled": True}
