"""Tenant configs in the table (FOLDGATE_CONFIG_SOURCE=table, the template's default) on DynamoDB and
SQS (moto_server): the schedule enqueues exactly the tenants in the registry, a tenant's reindex reads
the document just applied, and a deleted tenant drops out of the schedule."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3

from foldgate.app.indexer_lambda import build_indexer_handler
from foldgate.config.settings import Settings
from foldgate.store.configs.dynamodb import DynamoTenantConfigStore
from tests.lambdas import LambdaContext, event, load_function


def _doc(*servers: str) -> dict[str, Any]:
    return {"servers": [{"name": s, "url": f"https://{s}.invalid/mcp"} for s in servers]}


def _enqueued(sqs: Any, queue_url: str) -> list[str]:
    tenants: list[str] = []
    while got := sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10).get("Messages", []):
        for m in got:
            tenants.append(json.loads(m["Body"])["tenant"])
            sqs.delete_message(QueueUrl=queue_url, ReceiptHandle=m["ReceiptHandle"])
    return sorted(tenants)


def test_the_schedule_enqueues_the_registrys_tenants_and_a_reindex_reads_the_latest_document(
    dynamo_table: str,
) -> None:
    store = DynamoTenantConfigStore(dynamo_table)
    store.put("acme", _doc("crm"))
    store.put("globex", _doc("docs", "tickets"))
    sqs = boto3.client("sqs", region_name="us-east-1")
    queue_url = sqs.create_queue(QueueName=f"index-{uuid.uuid4().hex[:8]}")["QueueUrl"]
    env = {
        "FOLDGATE_STORE": "dynamodb",
        "FOLDGATE_TABLE_NAME": dynamo_table,
        "FOLDGATE_CONFIG_SOURCE": "table",
        "FOLDGATE_EMBEDDING_PROVIDER": "none",
        "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "false",
        "FOLDGATE_INDEX_QUEUE_URL": queue_url,
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    schedule = load_function("schedule", "schedule_table_configs_app", dict(env)).handler
    assert schedule(event("schedule.json"), LambdaContext())["enqueued"] == 2
    assert _enqueued(sqs, queue_url) == ["acme", "globex"]

    handler = build_indexer_handler(Settings.from_env(env))
    doc = handler({"action": "reindex", "tenant": "globex"}, LambdaContext())
    assert sorted(doc["tenants"]["globex"]["servers"]) == ["docs", "tickets"]
    store.put("acme", _doc("crm", "wiki"))
    doc = handler({"action": "reindex", "tenant": "acme"}, LambdaContext())
    assert sorted(doc["tenants"]["acme"]["servers"]) == ["crm", "wiki"]  # forced: no stale cache

    store.delete("globex")
    assert schedule(event("schedule.json"), LambdaContext())["enqueued"] == 1
    assert _enqueued(sqs, queue_url) == ["acme"]
