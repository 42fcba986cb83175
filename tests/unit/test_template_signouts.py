"""template.yaml lets the admin function (the console's) record console sign-outs and nothing more:
UpdateItem (what DynamoSignOutStore.sign_out calls) on the store's ``SIGNOUT#`` partition only, read
through the table-wide GetItem it already has; no other function may write sign-outs."""

from __future__ import annotations

from typing import Any

from foldgate.dev.bench.moto import template_resource
from foldgate.store.signouts.dynamodb import SIGNOUT_PREFIX


def _statements(function: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = template_resource(function)["Properties"]["Policies"][0]["Statement"]
    return statements


def _actions(statement: dict[str, Any]) -> list[str]:
    action = statement["Action"]
    return [action] if isinstance(action, str) else list(action)


def test_the_admin_function_may_update_only_sign_out_items_and_read_them() -> None:
    statements = {s["Sid"]: s for s in _statements("AdminFunction")}
    sign_out = statements["ConsoleSignOut"]
    assert _actions(sign_out) == ["dynamodb:UpdateItem"]
    assert sign_out["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] == [f"{SIGNOUT_PREFIX}*"]
    read = statements["CatalogRead"]
    assert "dynamodb:GetItem" in _actions(read)
    assert "Condition" not in read


def test_no_other_function_may_write_sign_outs() -> None:
    for function in ("McpFunction", "CodeFunction", "IndexerFunction"):
        for statement in _statements(function):
            keys = (
                statement.get("Condition", {})
                .get("ForAllValues:StringLike", {})
                .get("dynamodb:LeadingKeys", [])
            )
            assert not any(k.startswith("SIGNOUT") for k in keys), function
