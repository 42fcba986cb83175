"""template.yaml lets the serving functions record an agent token's last use and nothing more: an
UpdateItem on ``TOKEN#`` items limited to the attributes ``pk``, ``sk`` and ``last_used_at`` and
returning no values, for McpFunction and CodeFunction (both verify tokens); the indexer never may."""

from __future__ import annotations

from typing import Any

from foldgate.dev.bench.moto import template_resource

# What DynamoTokenStore.touch may name; tests/integration/store/tokens pins that it names no more.
LAST_USE_ATTRIBUTES = ["pk", "sk", "last_used_at"]


def _statements(function: str) -> dict[str, dict[str, Any]]:
    statements: list[dict[str, Any]] = template_resource(function)["Properties"]["Policies"][0]["Statement"]
    return {str(s.get("Sid")): s for s in statements}


def test_the_serving_functions_may_write_a_tokens_last_use_only() -> None:
    for function in ("McpFunction", "CodeFunction"):
        statement = _statements(function)["TokenLastUse"]
        assert statement["Action"] == "dynamodb:UpdateItem", function
        condition = statement["Condition"]
        assert condition["ForAllValues:StringLike"] == {"dynamodb:LeadingKeys": ["TOKEN#*"]}, function
        assert condition["ForAllValues:StringEquals"] == {"dynamodb:Attributes": LAST_USE_ATTRIBUTES}, (
            function
        )
        assert condition["StringEqualsIfExists"] == {"dynamodb:ReturnValues": "NONE"}, function


def test_the_indexer_may_not_write_tokens() -> None:
    assert "TokenLastUse" not in _statements("IndexerFunction")
