"""The IndexerFunction with tenant configs in the table (FOLDGATE_CONFIG_SOURCE=table, the template's
default) on DynamoDB (moto_server): the schedule indexes exactly the tenants in the registry, a
tenant's reindex reads the document just applied, and a deleted tenant drops out of the schedule."""

from __future__ import annotations

from typing import Any

from foldgate.app.indexer_lambda import build_indexer_handler
from foldgate.config.settings import Settings
from foldgate.store.configs.dynamodb import DynamoTenantConfigStore
from tests.lambdas import LambdaContext, event


def _doc(*servers: str) -> dict[str, Any]:
    return {"servers": [{"name": s, "url": f"https://{s}.invalid/mcp"} for s in servers]}


def test_the_schedule_indexes_the_registrys_tenants_and_a_reindex_reads_the_latest_document(
    dynamo_table: str,
) -> None:
    store = DynamoTenantConfigStore(dynamo_table)
    store.put("acme", _doc("crm"))
    store.put("globex", _doc("docs", "tickets"))
    settings = Settings.from_env(
        {
            "FOLDGATE_STORE": "dynamodb",
            "FOLDGATE_TABLE_NAME": dynamo_table,
            "FOLDGATE_CONFIG_SOURCE": "table",
            "FOLDGATE_EMBEDDING_PROVIDER": "none",
            "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "false",
        }
    )
    handler = build_indexer_handler(settings)
    doc = handler(event("schedule.json"), LambdaContext())
    assert doc["errors"] == {}
    assert sorted(doc["tenants"]) == ["acme", "globex"]
    assert sorted(doc["tenants"]["globex"]["servers"]) == ["docs", "tickets"]

    store.put("acme", _doc("crm", "wiki"))
    doc = handler({"action": "reindex", "tenant": "acme"}, LambdaContext())
    assert sorted(doc["tenants"]["acme"]["servers"]) == ["crm", "wiki"]  # forced: no stale cache

    store.delete("globex")
    doc = handler(event("schedule.json"), LambdaContext())
    assert sorted(doc["tenants"]) == ["acme"]
