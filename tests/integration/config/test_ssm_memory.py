"""Parameter Store reads on the instance's memory budget, against moto_server on loopback: the
configs and secrets of many tenants never hold more than the budget (Powertools' own cache, a dict
that never drops anything, stays empty), and a tenant whose reads were evicted reads them again and
gets the same config."""

from __future__ import annotations

import json
import uuid
from typing import Any

import boto3
import pytest

from foldgate.auth.secret_headers import SecretHeaders
from foldgate.config.ssm import SsmConfigSource
from foldgate.config.tenant import ServerConfig
from foldgate.model.lru import MemoryBudget

TENANTS = [f"tenant{i:02d}" for i in range(24)]


@pytest.fixture
def ssm(moto_endpoint: str) -> Any:
    return boto3.client("ssm", region_name="us-east-1")


@pytest.fixture
def prefix(ssm: Any) -> str:
    prefix = f"/fg-{uuid.uuid4().hex[:8]}"
    for i, tenant in enumerate(TENANTS):
        base = f"{prefix}/tenants/{tenant}"
        ssm.put_parameter(Name=f"{base}/config", Value=json.dumps({"defer_threshold": i + 1}), Type="String")
        server = {"url": f"https://{tenant}.example/mcp", "headers": {"X-Pad": "x" * 400}}
        ssm.put_parameter(Name=f"{base}/servers/crm", Value=json.dumps(server), Type="String")
    return prefix


def test_the_configs_of_many_tenants_stay_within_the_budget_and_read_back_the_same(
    ssm: Any, prefix: str
) -> None:
    memory = MemoryBudget(24_000)
    source = SsmConfigSource(prefix, max_age=300, client=ssm, memory=memory)
    first = {t: source.get(t) for t in TENANTS[:2]}
    for tenant in TENANTS:
        config = source.get(tenant)
        assert config.defer_threshold == TENANTS.index(tenant) + 1
        assert memory.bytes <= memory.budget
    stats = memory.stats()
    assert stats["kinds"]["ssm_config"]["evictions"] > 0
    assert stats["kinds"]["config"]["evictions"] > 0
    assert source._ssm.store == {}  # Powertools' unbounded dict is never filled
    for tenant, config in first.items():  # evicted: read and parsed again, to an equal config
        again = source.get(tenant)
        assert again == config
        assert [s.url for s in again.servers] == [f"https://{tenant}.example/mcp"]


def test_secret_headers_are_cached_on_the_budget(ssm: Any, prefix: str) -> None:
    memory = MemoryBudget(1_000_000)
    headers = SecretHeaders(max_age=300, client=ssm, memory=memory)
    name = f"{prefix}/tenants/{TENANTS[0]}/secrets/crm"
    ssm.put_parameter(Name=name, Value=json.dumps({"Authorization": "Bearer s3cret"}), Type="SecureString")
    server = ServerConfig(name="crm", url="https://crm.example/mcp", headers_secret=name)
    assert headers(server) == {"Authorization": "Bearer s3cret"}
    assert headers(server) == {"Authorization": "Bearer s3cret"}
    secrets = memory.stats()["kinds"]["ssm_secret"]
    assert (secrets["entries"], secrets["hits"]) == (1, 1)
    assert headers._ssm.store == {}
