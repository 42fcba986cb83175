"""Request quotas on the cloud path: two McpFunction instances (two cold starts of functions/mcp/app.py,
each with its own memory, as two warm Lambda instances) on one DynamoDB table (moto_server) share a
tenant's quota through its ``QUOTA#`` item; the second is refused with API Gateway's 429, a Retry-After
and the JSON-RPC error."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3

from tests.lambdas import LambdaContext, event, load_function


def test_two_instances_share_the_tenants_quota_through_the_table(
    moto_endpoint: str, dynamo_table: str, tmp_path: Path
) -> None:
    config = tmp_path / "foldgate.json"
    # 15 a minute: one request every 4 s, a bucket of one.
    config.write_text(json.dumps({"servers": [], "limits": {"requests_per_minute": 15}}))
    env: dict[str, str | None] = {
        "FOLDGATE_STORE": "dynamodb",
        "FOLDGATE_TABLE_NAME": dynamo_table,
        "FOLDGATE_CONFIG_SOURCE": "file",
        "FOLDGATE_CONFIG_FILE": str(config),
        "FOLDGATE_RATE_LIMIT_PER_MINUTE": "0",
    }
    first = load_function("mcp", "mcp_quota_first", env).handler
    second = load_function("mcp", "mcp_quota_second", env).handler
    ping = event("mcp_initialize.json")
    answered: dict[str, Any] = first(ping, LambdaContext())
    assert answered["statusCode"] == 200, answered
    refused: dict[str, Any] = second(ping, LambdaContext())
    assert refused["statusCode"] == 429, refused
    assert refused["headers"]["retry-after"] in ("3", "4")
    body = json.loads(refused["body"])
    assert body["error"]["code"] == -32002
    assert "tenant's request quota exceeded" in body["error"]["message"]
    items = boto3.client("dynamodb").scan(TableName=dynamo_table)["Items"]
    assert [i["pk"]["S"] for i in items if i["pk"]["S"].startswith("QUOTA#")] == ["QUOTA#default\x1ftenant"]
