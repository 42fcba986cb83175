"""template.yaml's AdminFunction: it alone serves the admin API and the console, and its role alone may
write tenant configs (the table's config documents and registry, conditioned on their partition keys),
approvals, agent tokens and console sign-outs, and invoke the indexer; McpFunction and CodeFunction
read configs and write none of it. The functions' write statements are read from the template itself,
so a statement added later without a partition condition fails here."""

from __future__ import annotations

from typing import Any

from foldgate.dev.bench.moto import template_resource
from foldgate.store.configs.dynamodb import REGISTRY_PK
from tests.procs import REPO

WRITES = {
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:PartiQLInsert",
    "dynamodb:PartiQLUpdate",
    "dynamodb:PartiQLDelete",
    "dynamodb:*",
}
# A tenant's config document is the item TENANT#{tenant} / CONFIG (store/configs/dynamodb.py).
CONFIG_PK = "TENANT#acme"
ADMIN_PATHS = {"/api/v1/{proxy+}", "/console", "/console/{proxy+}"}


def _policies(function: str) -> list[Any]:
    policies: list[Any] = template_resource(function)["Properties"]["Policies"]
    return policies


def _statements(function: str) -> list[dict[str, Any]]:
    statements: list[dict[str, Any]] = _policies(function)[0]["Statement"]
    return statements


def _actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return {action} if isinstance(action, str) else set(action)


def _leading_keys(statement: dict[str, Any]) -> list[str] | None:
    keys: list[str] | None = (
        statement.get("Condition", {}).get("ForAllValues:StringLike", {}).get("dynamodb:LeadingKeys")
    )
    return keys


def _matches(pattern: str, key: str) -> bool:
    return key.startswith(pattern[:-1]) if pattern.endswith("*") else key == pattern


def _may_write(function: str, key: str) -> bool:
    """Whether any statement of the function lets it write an item whose partition key is ``key``."""
    for statement in _statements(function):
        if statement["Effect"] != "Allow" or not (_actions(statement) & WRITES):
            continue
        keys = _leading_keys(statement)
        if keys is None or any(_matches(k, key) for k in keys):
            return True
    return False


def _paths(function: str) -> set[str]:
    events = template_resource(function)["Properties"]["Events"]
    return {e["Properties"]["Path"] for e in events.values() if e["Type"] == "HttpApi"}


def test_the_admin_api_and_the_console_reach_admin_function_only() -> None:
    assert _paths("AdminFunction") == ADMIN_PATHS
    for function in ("McpFunction", "CodeFunction"):
        assert not _paths(function) & ADMIN_PATHS, function
    admin = template_resource("AdminFunction")["Properties"]
    assert admin["CodeUri"] == "functions/admin/"
    assert (REPO / "functions" / "admin" / "app.py").is_file()


def test_admin_function_may_write_config_documents_and_the_registry_on_those_keys_only() -> None:
    assert _may_write("AdminFunction", CONFIG_PK)
    assert _may_write("AdminFunction", REGISTRY_PK)
    (config,) = [s for s in _statements("AdminFunction") if s.get("Sid") == "TenantConfigWrite"]
    assert _actions(config) == {"dynamodb:PutItem"}  # TransactWriteItems' Put, checked per item
    assert _leading_keys(config) == ["TENANT#*", REGISTRY_PK]
    # Every write statement of the admin role is confined to partitions.
    for statement in _statements("AdminFunction"):
        if _actions(statement) & WRITES:
            assert _leading_keys(statement), statement["Sid"]


def test_the_functions_serving_agents_cannot_write_configs_or_operator_items() -> None:
    for function in ("McpFunction", "CodeFunction"):
        for key in (CONFIG_PK, REGISTRY_PK, "APPROVAL#acme", "SIGNOUT#s"):
            assert not _may_write(function, key), (function, key)
        # A token item only through TokenLastUse: its last_used_at attribute, never a grant or digest.
        token_writes = [
            s
            for s in _statements(function)
            if _actions(s) & WRITES and any(_matches(k, "TOKEN#tok_1") for k in (_leading_keys(s) or ["*"]))
        ]
        assert [s.get("Sid") for s in token_writes] == ["TokenLastUse"], function
        (last_use,) = token_writes
        assert _actions(last_use) == {"dynamodb:UpdateItem"}
        attributes = last_use["Condition"]["ForAllValues:StringEquals"]["dynamodb:Attributes"]
        assert sorted(attributes) == ["last_used_at", "pk", "sk"]
        # They still read the table (configs included) and Parameter Store.
        sids = {s.get("Sid") for s in _statements(function)}
        assert {"CatalogRead", "TenantConfigRead"} <= sids


def test_no_function_writes_parameter_store_and_only_admin_function_invokes_the_indexer() -> None:
    for function in ("McpFunction", "CodeFunction", "AdminFunction"):
        for statement in _statements(function):
            assert not any(a.startswith("ssm:Put") or a == "ssm:*" for a in _actions(statement)), function
    invokers = {
        f for f in ("McpFunction", "CodeFunction", "AdminFunction")
        if any(
            isinstance(p, dict) and p.get("LambdaInvokePolicy", {}).get("FunctionName") == "IndexerFunction"
            for p in _policies(f)
        )
    }  # fmt: skip
    assert invokers == {"AdminFunction"}
    env = template_resource("AdminFunction")["Properties"]["Environment"]["Variables"]
    assert env["FOLDGATE_INDEXER_FUNCTION"] == "IndexerFunction"  # !Ref IndexerFunction
    assert (
        "FOLDGATE_INDEXER_FUNCTION"
        not in template_resource("McpFunction")["Properties"]["Environment"]["Variables"]
    )
