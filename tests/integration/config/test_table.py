"""Tenant configs from the table (the ``table`` config source) over the real stores: one document per
tenant served with the cloud's rules (own secrets only, no stdio, last good kept), reads cached
``max_age`` per tenant and bounded in number, and the tenant list read from the registry in one call
per ~12,800 tenants — where Parameter Store's listing cost one call per 10 parameters."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from foldgate.config.ssm import SsmConfigSource
from foldgate.config.table import TableConfigSource
from foldgate.errors import ConfigError, NotFoundError
from foldgate.model.lru import MemoryBudget
from foldgate.store.configs.base import StoredConfig, TenantConfigStore
from foldgate.store.configs.dynamodb import REGISTRY_PK, DynamoTenantConfigStore
from foldgate.store.configs.sqlite import SqliteTenantConfigStore

PREFIX = "/fg"
SERVER = {"name": "gh", "url": "https://gh.example/mcp", "headers_secret": "github"}


class Counting(TenantConfigStore):
    """A store that counts the reads that reach it."""

    def __init__(self, inner: TenantConfigStore) -> None:
        self.inner = inner
        self.reads: list[tuple[str, bool]] = []

    def put(
        self, tenant: str, doc: dict[str, Any], *, expected_revision: str | None = None
    ) -> tuple[StoredConfig, bool]:
        return self.inner.put(tenant, doc, expected_revision=expected_revision)

    def get(self, tenant: str, *, consistent: bool = False) -> StoredConfig | None:
        self.reads.append((tenant, consistent))
        return self.inner.get(tenant, consistent=consistent)

    def delete(self, tenant: str) -> bool:
        return self.inner.delete(tenant)

    def tenants(self) -> list[str]:
        return self.inner.tenants()


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Counting]:
    inner = SqliteTenantConfigStore(tmp_path / "store.sqlite3")
    yield Counting(inner)
    inner.close()


def test_a_document_is_served_with_its_secrets_resolved_under_the_tenants_own_path(store: Counting) -> None:
    store.put("acme", {"routing_mode": "direct", "servers": [SERVER]})
    config = TableConfigSource(store, PREFIX).get("acme")
    assert config.routing_mode == "direct"
    server = config.server("gh")
    assert server is not None
    assert server.headers_secret == "/fg/tenants/acme/secrets/github"


@pytest.mark.parametrize(
    ("server", "says"),
    [
        ({**SERVER, "headers_secret": "/fg/tenants/victim/secrets/github"}, "must name a parameter under"),
        ({**SERVER, "headers_secret": "/fg/secrets/token-hmac-key"}, "must name a parameter under"),
        ({"name": "local", "transport": "stdio", "command": ["sh"]}, "only in local mode"),
    ],
)
def test_a_hostile_document_is_refused_as_in_every_cloud_source(
    store: Counting, server: dict[str, Any], says: str
) -> None:
    store.put("acme", {"servers": [server]})
    with pytest.raises(ConfigError, match=says):
        TableConfigSource(store, PREFIX).get("acme")


def test_a_change_applies_after_max_age_and_at_once_when_forced(store: Counting) -> None:
    clock = Clock()
    source = TableConfigSource(store, PREFIX, max_age=30, clock=clock)
    store.put("acme", {"tools_limit": 5})
    first = source.get("acme")
    store.put("acme", {"tools_limit": 7})
    clock.now += 10
    assert source.get("acme") is first  # cached: no read
    assert len(store.reads) == 1
    clock.now += 25
    assert source.get("acme").tools_limit == 7
    store.put("acme", {"tools_limit": 9})
    assert source.get("acme", force=True).tools_limit == 9
    assert store.reads[-1] == ("acme", True)  # a change trigger reads consistently


def test_an_unchanged_document_read_again_is_the_same_object(store: Counting) -> None:
    """Views keyed on the config object stay cached across re-reads of the same revision."""
    clock = Clock()
    source = TableConfigSource(store, PREFIX, max_age=30, clock=clock)
    store.put("acme", {"servers": [SERVER]})
    first = source.get("acme")
    clock.now += 60
    assert source.get("acme") is first
    assert len(store.reads) == 2


def test_a_bad_document_keeps_the_last_good_config_and_says_why(store: Counting) -> None:
    source = TableConfigSource(store, PREFIX, max_age=0)
    store.put("acme", {"tools_limit": 5})
    good = source.get("acme")
    store.put("acme", {"routing_mode": "schema_deferred"})
    assert source.get("acme") is good
    problem = source.problem("acme")
    assert problem is not None
    assert "direct_tool_response_mode" in problem


def test_unknown_tenants_are_cached_too_and_the_cache_is_bounded(store: Counting) -> None:
    clock = Clock()
    source = TableConfigSource(store, PREFIX, max_age=30, clock=clock, max_tenants=2)
    for _ in range(3):
        with pytest.raises(NotFoundError):
            source.get("ghost")
    assert store.reads == [("ghost", False)]  # a flood of one made-up name: one read per max_age
    store.put("a", {})
    store.put("b", {})
    source.get("a")
    source.get("b")  # "ghost" is dropped: least recently used
    with pytest.raises(NotFoundError):
        source.get("ghost")
    assert store.reads.count(("ghost", False)) == 2


def test_listing_comes_from_the_registry(store: Counting) -> None:
    for tenant in ("b", "a", "c"):
        store.put(tenant, {})
    store.delete("c")
    assert TableConfigSource(store, PREFIX).tenants() == ["a", "b"]


def _count_calls(client: Any) -> list[str]:
    calls: list[str] = []
    client.meta.events.register("before-call.*.*", lambda model, **_: calls.append(model.name))
    return calls


def test_the_registry_lists_hundreds_of_tenants_in_one_dynamodb_call(dynamo_table: str) -> None:
    client = boto3.client("dynamodb")
    store = DynamoTenantConfigStore(dynamo_table, client=client)
    store.put("t0000", {"servers": [SERVER]})
    # The other entries written in batches, as ``put`` writes them (moto takes ~50 ms a transaction).
    entry = {"revision": {"S": "r"}, "updated_at": {"N": "1"}}
    rows = [{"pk": {"S": REGISTRY_PK}, "sk": {"S": f"t{i:04d}"}, **entry} for i in range(1, 400)]
    for start in range(0, len(rows), 25):
        batch = [{"PutRequest": {"Item": row}} for row in rows[start : start + 25]]
        client.batch_write_item(RequestItems={dynamo_table: batch})
    calls = _count_calls(client)
    assert len(TableConfigSource(store, PREFIX).tenants()) == 400
    assert calls == ["Query"]


def test_parameter_store_listing_asks_for_fifty_names_a_call(moto_endpoint: str) -> None:
    """The Parameter Store source stays usable for existing stacks: DescribeParameters asks for its
    largest page (50; boto3's default is 10), a fifth of the calls on AWS. moto pages by 10 whatever
    is asked, so the request is what is pinned."""
    ssm = boto3.client("ssm", region_name="us-east-1")
    prefix = f"/fg-{uuid.uuid4().hex[:8]}"
    for i in range(12):
        ssm.put_parameter(Name=f"{prefix}/tenants/t{i:02d}/config", Value="{}", Type="String")
    asked: list[Any] = []
    ssm.meta.events.register(
        "provide-client-params.ssm.DescribeParameters",
        lambda params, **_: asked.append(params.get("MaxResults")),
    )
    assert len(SsmConfigSource(prefix, client=ssm).tenants()) == 12
    assert asked
    assert set(asked) == {50}


def test_parsed_configs_live_on_the_memory_budget_and_an_evicted_one_reads_back_the_same(
    store: Counting,
) -> None:
    """The table source keeps no document or parsed config of its own: many tenants stay within the
    instance's byte budget, and a tenant whose config was evicted is read and parsed again, equal."""
    memory = MemoryBudget(24_000)
    source = TableConfigSource(store, PREFIX, max_age=30, memory=memory)
    docs = {
        f"t{i}": {"tools_limit": 5 + i, "servers": [SERVER], "instructions": "x" * 400} for i in range(40)
    }
    for tenant, doc in docs.items():
        store.put(tenant, doc)
    first = {tenant: source.get(tenant) for tenant in docs}
    assert memory.bytes <= 24_000
    assert memory.stats()["evictions"] > 0
    reads = len(store.reads)
    again = source.get("t0")  # evicted long ago: read and parsed again
    assert len(store.reads) == reads + 1
    assert again == first["t0"]
    assert again.tools_limit == 5


def test_a_refused_document_is_not_read_again_before_max_age(store: Counting) -> None:
    clock = Clock()
    source = TableConfigSource(store, PREFIX, max_age=30, clock=clock)
    store.put("acme", {"routing_mode": "schema_deferred"})
    for _ in range(3):
        with pytest.raises(ConfigError):
            source.get("acme")
    assert store.reads == [("acme", False)]
    clock.now += 31
    with pytest.raises(ConfigError):
        source.get("acme")
    assert len(store.reads) == 2
