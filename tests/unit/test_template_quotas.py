"""template.yaml lets the serving functions lease request quotas and nothing more: UpdateItem (what
DynamoQuotaStore.take calls, its only call) on the store's ``QUOTA#`` partition only, for McpFunction
and CodeFunction (/mcp/code counts against the same quotas); the indexer never touches them."""

from __future__ import annotations

from typing import Any

from foldgate.dev.bench.moto import template_resource
from foldgate.store.quotas.dynamodb import QUOTA_PREFIX


def _statements(function: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = template_resource(function)["Properties"]["Policies"][0]["Statement"]
    return statements


def _leading_keys(statement: dict[str, Any]) -> list[str]:
    keys: list[str] = (
        statement.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys", [])
    )
    return keys


def test_the_serving_functions_may_update_quota_items_only() -> None:
    for function in ("McpFunction", "CodeFunction"):
        quotas = {s["Sid"]: s for s in _statements(function)}["RequestQuotas"]
        assert quotas["Action"] == "dynamodb:UpdateItem", function
        assert _leading_keys(quotas) == [f"{QUOTA_PREFIX}*"], function


def test_no_other_statement_names_quota_items_and_the_indexer_has_none() -> None:
    for function in ("McpFunction", "CodeFunction", "IndexerFunction"):
        for statement in _statements(function):
            if statement.get("Sid") != "RequestQuotas":
                assert not any(k.startswith("QUOTA") for k in _leading_keys(statement)), function
    assert "RequestQuotas" not in {s.get("Sid") for s in _statements("IndexerFunction")}
