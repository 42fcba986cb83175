"""Index runs: which tenants each real trigger event selects, and that one tenant's bad config or dead
upstream never stops the others nor replaces a last good catalog."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.errors import ConfigError, InvalidRequestError, UpstreamError
from foldgate.index.indexer import Indexer
from foldgate.index.job import IndexJob, IndexRequest, parse_index_event
from foldgate.model.deadline import time_left
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import Listing, UpstreamClient
from tests.procs import REPO

PREFIX = "/foldgate"


def event(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO / "events" / name).read_text())
    return data


class FakeUpstream(UpstreamClient):
    """Lists two tools per server; servers named in ``down`` fail; records the timeouts it was given
    (the server's own) and the time the run's deadline left it (None: no deadline)."""

    def __init__(self) -> None:
        super().__init__()
        self.down: set[str] = set()
        self.timeouts: dict[str, float] = {}
        self.left: dict[str, float | None] = {}

    async def list_tools(self, server: ServerConfig) -> Listing:
        self.timeouts[server.name] = server.timeout_s
        self.left[server.name] = time_left()
        if server.name in self.down:
            raise UpstreamError(f"{server.name}: connection refused")
        tools = [
            {"name": f"{server.name}_{i}", "description": "d", "inputSchema": {"type": "object"}}
            for i in range(2)
        ]
        return Listing(tools=tools)


def config(*servers: str) -> TenantConfig:
    return parse_tenant_config({"servers": [{"name": s, "url": f"http://127.0.0.1:9/{s}"} for s in servers]})


class BrokenFor(StaticConfigSource):
    """A config source where some tenants' documents fail validation."""

    def __init__(self, configs: dict[str, TenantConfig], broken: set[str]) -> None:
        super().__init__(configs)
        self.broken = broken
        self.forced: list[str] = []

    def get(self, tenant: str, *, force: bool = False) -> TenantConfig:
        if force:
            self.forced.append(tenant)
        if tenant in self.broken:
            raise ConfigError(f"invalid tenant config in {tenant}: servers.0.url: bad")
        return super().get(tenant)

    def tenants(self) -> list[str]:
        return sorted({*self.configs, *self.broken})


def test_schedule_event_selects_every_tenant() -> None:
    assert parse_index_event(event("schedule.json"), config_prefix=PREFIX) == IndexRequest("schedule", None)


def test_parameter_change_selects_only_that_tenant_and_forces_a_fresh_read() -> None:
    req = parse_index_event(event("ssm_change.json"), config_prefix=PREFIX)
    assert req == IndexRequest("config_change", ("acme",), force_config=True)


def test_parameter_change_outside_the_tenants_path_is_an_empty_run() -> None:
    ev = event("ssm_change.json")
    ev["detail"]["name"] = "/other-app/tenants/acme/config"
    assert parse_index_event(ev, config_prefix=PREFIX).tenants == ()


def test_direct_invoke_selects_its_tenants() -> None:
    assert parse_index_event(event("reindex_invoke.json"), config_prefix=PREFIX).tenants == ("acme",)
    req = parse_index_event({"tenants": ["a", "b"]}, config_prefix=PREFIX)
    assert req.tenants == ("a", "b")


@pytest.mark.parametrize(
    "bad", [[], "x", {"hello": 1}, {"tenant": ""}, {"tenants": []}, {"tenants": [1]}, {"action": "drop"}]
)
def test_unknown_events_are_rejected_with_a_message(bad: Any) -> None:
    with pytest.raises(InvalidRequestError):
        parse_index_event(bad, config_prefix=PREFIX)


async def test_a_bad_config_skips_its_tenant_and_keeps_its_last_catalog() -> None:
    store = SqliteStore(":memory:")
    upstream = FakeUpstream()
    good = StaticConfigSource({"a": config("s1"), "b": config("s2")})
    first = await IndexJob(Indexer(store, upstream), good).run(IndexRequest("schedule", None))
    assert [r.tenant for r in first.reports] == ["a", "b"]
    b_version = store.current_version("b")

    configs = BrokenFor({"a": config("s1", "s3")}, broken={"b"})
    result = await IndexJob(Indexer(store, upstream), configs).run(IndexRequest("schedule", None))
    assert [r.tenant for r in result.reports] == ["a"]
    assert result.reports[0].changed
    assert "servers.0.url" in result.errors["b"]
    assert store.current_version("b") == b_version  # the last good catalog keeps serving
    doc = result.to_doc()
    assert doc["tenants"]["a"]["tools"] == 4
    assert doc["errors"]["b"].startswith("invalid tenant config")


async def test_change_events_bypass_the_config_cache() -> None:
    configs = BrokenFor({"a": config("s1")}, broken=set())
    job = IndexJob(Indexer(SqliteStore(":memory:"), FakeUpstream()), configs)
    await job.run(IndexRequest("config_change", ("a",), force_config=True))
    await job.run(IndexRequest("schedule", None))
    assert configs.forced == ["a"]


async def test_unknown_tenant_is_reported_not_raised() -> None:
    job = IndexJob(Indexer(SqliteStore(":memory:"), FakeUpstream()), StaticConfigSource({}))
    result = await job.run(IndexRequest("invoke", ("ghost",)))
    assert result.reports == []
    assert "ghost" in result.errors["ghost"]


async def test_upstream_calls_are_bounded_by_the_deadline_not_by_a_rewritten_timeout() -> None:
    upstream = FakeUpstream()
    cfg = parse_tenant_config(
        {"servers": [{"name": "slow", "url": "http://127.0.0.1:9/x", "timeout_s": 600}]}
    )
    job = IndexJob(Indexer(SqliteStore(":memory:"), upstream), StaticConfigSource({"a": cfg}))
    await job.run(IndexRequest("invoke", ("a",)), deadline=time.monotonic() + 40)
    left = upstream.left["slow"]
    assert left is not None
    assert 25 <= left <= 30  # 40 s left minus the publish margin
    assert upstream.timeouts["slow"] == 600  # the server's own timeout is never rewritten
    await job.run(IndexRequest("invoke", ("a",)))
    assert upstream.left["slow"] is None  # no deadline: the server's own timeout alone


async def test_an_unchanged_tenant_indexed_near_a_deadline_publishes_no_new_version() -> None:
    """The deadline bounds the run's upstream calls but is no part of the config the catalog records
    and fingerprints: the same listings publish nothing new however little time a run has left."""
    store = SqliteStore(":memory:")
    upstream = FakeUpstream()
    cfg = parse_tenant_config({"servers": [{"name": "s1", "url": "http://127.0.0.1:9/s1", "timeout_s": 30}]})
    job = IndexJob(Indexer(store, upstream), StaticConfigSource({"a": cfg}))
    first = await job.run(IndexRequest("schedule", None))
    assert first.reports[0].changed
    version = store.current_version("a")
    for seconds_left in (5.0, 12.0, 3.0):  # the tail of a run: 1 s floor, a few seconds, the floor
        again = await job.run(IndexRequest("schedule", None), deadline=time.monotonic() + seconds_left)
        assert not again.reports[0].changed
        assert store.current_version("a") == version
    catalog = store.load_current("a")
    assert catalog is not None
    assert catalog.config is not None
    assert catalog.config["servers"][0]["timeout_s"] == 30  # the operator's timeout, as configured


async def test_a_dead_upstream_keeps_its_last_tools() -> None:
    store = SqliteStore(":memory:")
    upstream = FakeUpstream()
    job = IndexJob(Indexer(store, upstream), StaticConfigSource({"a": config("s1", "s2")}))
    await job.run(IndexRequest("invoke", ("a",)))
    upstream.down.add("s2")
    result = await job.run(IndexRequest("invoke", ("a",)))
    report = result.reports[0]
    assert report.failed_servers == 1
    catalog = store.load_current("a")
    assert catalog is not None
    assert sorted(t.published for t in catalog.tools) == ["s1__s1_0", "s1__s1_1", "s2__s2_0", "s2__s2_1"]
