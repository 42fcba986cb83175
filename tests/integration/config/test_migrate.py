"""Moving an existing stack's tenant configs from Parameter Store into the table (moto_server): every
valid tenant is served by the ``table`` source exactly as the Parameter Store source served it, secrets
stay in Parameter Store and out of the table, an invalid tenant is reported and not moved, and a second
run writes nothing."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3

from foldgate.config.migrate import migrate_from_ssm
from foldgate.config.ssm import SsmConfigSource
from foldgate.config.table import TableConfigSource
from foldgate.store.configs.dynamodb import DynamoTenantConfigStore


def put(ssm: Any, name: str, value: Any, kind: str = "String") -> None:
    ssm.put_parameter(Name=name, Value=json.dumps(value), Type=kind, Overwrite=True)


def test_migrated_tenants_are_served_as_before_and_a_second_run_writes_nothing(dynamo_table: str) -> None:
    ssm = boto3.client("ssm", region_name="us-east-1")
    prefix = f"/fg-{uuid.uuid4().hex[:8]}"
    acme = f"{prefix}/tenants/acme"
    put(
        ssm,
        f"{acme}/config",
        {"routing_mode": "direct", "servers": [{"name": "a", "url": "https://a.example"}]},
    )
    put(ssm, f"{acme}/servers/github", {"url": "https://gh.example/mcp", "headers_secret": "github"})
    put(ssm, f"{acme}/secrets/github", {"Authorization": "Bearer sekrit-123"}, "SecureString")
    put(ssm, f"{prefix}/tenants/bad/config", {"routing_mode": "schema_deferred"})
    store = DynamoTenantConfigStore(dynamo_table)

    dry = migrate_from_ssm(store, prefix, client=ssm, dry_run=True)
    assert dry.outcomes["acme"] == "would write"
    assert store.tenants() == []

    report = migrate_from_ssm(store, prefix, client=ssm)
    assert report.outcomes["acme"] == "written"
    assert report.failed == ["bad"]
    assert "direct_tool_response_mode" in report.outcomes["bad"]
    assert store.tenants() == ["acme"]

    before = SsmConfigSource(prefix, client=ssm).get("acme")
    after = TableConfigSource(store, prefix).get("acme")
    assert after.model_dump() == before.model_dump()
    stored = store.get("acme", consistent=True)
    assert stored is not None
    assert "sekrit" not in json.dumps(stored.doc)  # secrets never leave Parameter Store

    again = migrate_from_ssm(store, prefix, client=ssm)
    assert again.outcomes["acme"] == "unchanged"
