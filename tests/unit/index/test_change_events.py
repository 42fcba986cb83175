"""The indexer events of change triggers: a webhook's server reindex and the freshness schedule, as
parsed from the real event files and as run by the job (only the named server; only changed servers;
an upstream's ttlMs hint skips its listing)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.errors import InvalidRequestError
from foldgate.index.indexer import Indexer
from foldgate.index.job import IndexJob, IndexRequest, parse_index_event
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import Listing, UpstreamClient
from tests.procs import REPO

PREFIX = "/foldgate"


def event(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((REPO / "events" / name).read_text())
    return data


class Upstreams(UpstreamClient):
    """Lists ``tools[server]``; records every listing asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.tools = {
            s: [{"name": f"{s}_a", "description": "d", "inputSchema": {"type": "object"}}]
            for s in ("crm", "mail")
        }
        self.ttl: dict[str, int] = {}
        self.asked: list[str] = []

    async def list_tools(self, server: ServerConfig) -> Listing:
        self.asked.append(server.name)
        return Listing(tools=[dict(t) for t in self.tools[server.name]], ttl_ms=self.ttl.get(server.name))


def config() -> TenantConfig:
    return parse_tenant_config(
        {"servers": [{"name": s, "url": f"http://127.0.0.1:9/{s}"} for s in ("crm", "mail")]}
    )


async def indexed() -> tuple[IndexJob, SqliteStore, Upstreams]:
    store, upstream = SqliteStore(":memory:"), Upstreams()
    job = IndexJob(Indexer(store, upstream), StaticConfigSource({"acme": config()}))
    await job.run(IndexRequest("schedule", None))
    upstream.asked.clear()
    return job, store, upstream


def test_a_server_invoke_selects_that_server_of_that_tenant() -> None:
    request = parse_index_event(event("server_change_invoke.json"), config_prefix=PREFIX)
    assert request == IndexRequest("server_change", ("acme",), force_config=True, servers=("crm",))


def test_the_freshness_event_selects_every_tenant() -> None:
    assert parse_index_event(event("freshness.json"), config_prefix=PREFIX) == IndexRequest("freshness", None)


@pytest.mark.parametrize(
    "bad",
    [
        {"action": "reindex", "tenant": "acme", "server": 3},
        {"action": "reindex", "server": "crm"},
        {"action": "reindex", "tenant": "acme", "server": "../x"},
    ],
)
def test_malformed_server_invokes_are_rejected(bad: Any) -> None:
    with pytest.raises(InvalidRequestError):
        parse_index_event(bad, config_prefix=PREFIX)


async def test_a_server_reindex_lists_only_that_server() -> None:
    job, _store, upstream = await indexed()
    upstream.tools["crm"].append({"name": "crm_b", "description": "d", "inputSchema": {"type": "object"}})
    result = await job.run(parse_index_event(event("server_change_invoke.json"), config_prefix=PREFIX))
    assert upstream.asked == ["crm"]
    assert result.reports[0].changed
    assert result.reports[0].tools == 3


async def test_a_server_reindex_of_an_unknown_server_is_reported_not_run() -> None:
    job, _, upstream = await indexed()
    result = await job.run(IndexRequest("server_change", ("acme",), servers=("nope",)))
    assert upstream.asked == []
    assert "nope" in result.errors["acme"]


async def test_freshness_publishes_nothing_when_no_listing_changed() -> None:
    job, store, upstream = await indexed()
    before = store.current_version("acme")
    result = await job.run(IndexRequest("freshness", None))
    assert sorted(upstream.asked) == ["crm", "mail"]
    assert result.reports == []
    assert store.current_version("acme") == before


async def test_freshness_reindexes_only_the_changed_server() -> None:
    job, store, upstream = await indexed()
    before = store.load_current("acme")
    assert before is not None
    upstream.tools["mail"][0]["description"] = "changed"
    result = await job.run(IndexRequest("freshness", None))
    after = store.load_current("acme")
    assert after is not None
    assert result.reports[0].changed
    assert upstream.asked.count("crm") == 1  # the check's listing only: crm was not reindexed
    assert [t.to_doc() for t in after.tools if t.server == "crm"] == [
        t.to_doc() for t in before.tools if t.server == "crm"
    ]


async def test_freshness_honours_an_upstream_ttl_hint() -> None:
    job, _, upstream = await indexed()
    upstream.ttl["crm"] = 3_600_000
    await job.run(IndexRequest("freshness", None))
    upstream.asked.clear()
    await job.run(IndexRequest("freshness", None))
    assert upstream.asked == ["mail"]  # crm said its list stays fresh for an hour


async def test_an_unchanged_tenant_costs_one_pointer_read_per_freshness_run() -> None:
    job, store, _ = await indexed()
    await job.run(IndexRequest("freshness", None))  # the first run loads the version
    loads: list[str] = []
    load_version = store.load_version

    def counting(tenant: str, version: str) -> Any:
        loads.append(version)
        return load_version(tenant, version)

    store.load_version = counting  # type: ignore[method-assign]
    for _ in range(3):
        await job.run(IndexRequest("freshness", None))
    assert loads == []
