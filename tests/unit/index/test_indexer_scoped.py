"""A server-scoped reindex (``Indexer.index_server``): only that server is listed, only its entries
change, everything else (tools, statuses, holds, order) is carried over from the current version."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig, TenantConfig, parse_tenant_config
from foldgate.errors import NotFoundError
from foldgate.index.indexer import Indexer
from foldgate.model.catalog import CatalogVersion
from foldgate.store.approvals.sqlite import SqliteApprovalStore
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import Listing, UpstreamClient


def config() -> TenantConfig:
    return parse_tenant_config(
        {
            "servers": [
                {"name": "crm", "url": "http://127.0.0.1:9/crm", "trusted": True},
                {"name": "docs", "url": "http://127.0.0.1:9/docs", "trusted": False},
                {"name": "mail", "url": "http://127.0.0.1:9/mail", "trusted": True},
            ]
        }
    )


def entry(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "inputSchema": {"type": "object"}}


class Upstreams(UpstreamClient):
    """Answers each server's listing from a dict and records which servers were asked."""

    def __init__(self) -> None:
        super().__init__()
        self.tools: dict[str, list[dict[str, Any]]] = {
            "crm": [entry("find", "Find a customer."), entry("merge", "Merge two customers.")],
            "docs": [entry("search", "Search the docs.")],
            "mail": [entry("send", "Send a mail.")],
        }
        self.asked: list[str] = []

    async def list_tools(self, server: ServerConfig) -> Listing:
        self.asked.append(server.name)
        return Listing(tools=[dict(t) for t in self.tools[server.name]])


def docs_of(catalog: CatalogVersion, server: str) -> list[dict[str, Any]]:
    return [t.to_doc() for t in catalog.tools if t.server == server]


async def indexed() -> tuple[Indexer, SqliteStore, Upstreams, CatalogVersion]:
    store, upstream = SqliteStore(":memory:"), Upstreams()
    indexer = Indexer(store, upstream, approvals=SqliteApprovalStore(":memory:"))
    await indexer.index_tenant("t", config())
    before = store.load_current("t")
    assert before is not None
    upstream.asked.clear()
    return indexer, store, upstream, before


async def test_a_scoped_reindex_lists_only_that_server_and_leaves_the_others_untouched() -> None:
    indexer, store, upstream, before = await indexed()
    upstream.tools["crm"] = [entry("find", "Find a customer by name."), entry("close", "Close an account.")]
    upstream.tools["mail"] = [entry("send", "Changed upstream, but not reindexed.")]
    report = await indexer.index_server("t", config(), "crm")
    after = store.load_current("t")
    assert after is not None
    assert report.changed
    assert after.version != before.version
    assert upstream.asked == ["crm"]
    assert docs_of(after, "mail") == docs_of(before, "mail")
    # docs' pending tool stays held exactly as it was
    assert {k: w for k, w in after.withheld.items() if w["server"] == "docs"} == before.withheld
    assert after.servers["mail"] == before.servers["mail"]
    assert {t.tool.key: t.tool.description for t in after.tools if t.server == "crm"} == {
        "crm:find": "Find a customer.",  # a rug pull of an approved tool keeps its approved content
        "crm:close": "Close an account.",
    }
    assert after.approvals == {"crm:find": "changed"}
    # Untouched servers keep their place in the listing order (and so in the search index).
    assert [t.server for t in after.tools] == ["crm", "crm", "mail"]


async def test_the_untouched_servers_entries_are_reused_not_recomputed() -> None:
    indexer, _store, upstream, _ = await indexed()
    counted: list[str] = []
    count = indexer.count

    def recording(text: str) -> int:
        counted.append(text)
        return count(text)

    indexer.count = recording
    upstream.tools["crm"].append(entry("close", "Close an account."))
    await indexer.index_server("t", config(), "crm")
    # Only the new tool was rendered and counted; mail's and crm's unchanged entries were carried over.
    assert counted
    assert all("Close an account." in text for text in counted)


async def test_a_scoped_reindex_with_nothing_changed_publishes_nothing() -> None:
    indexer, store, _, before = await indexed()
    report = await indexer.index_server("t", config(), "mail")
    assert not report.changed
    assert store.current_version("t") == before.version


async def test_a_failing_scoped_server_keeps_its_tools_and_the_others_theirs() -> None:
    indexer, store, upstream, before = await indexed()

    async def down(server: ServerConfig) -> Listing:
        from foldgate.errors import UpstreamError  # the failure the real client raises

        raise UpstreamError(f"{server.name}: connection refused")

    upstream.list_tools = down  # type: ignore[method-assign]
    await indexer.index_server("t", config(), "crm")
    after = store.load_current("t")
    assert after is not None
    assert docs_of(after, "crm") == docs_of(before, "crm")
    assert not after.servers["crm"].healthy
    assert after.servers["mail"].healthy


async def test_an_unknown_server_is_not_found() -> None:
    indexer, _, _, _ = await indexed()
    with pytest.raises(NotFoundError):
        await indexer.index_server("t", config(), "nope")


async def test_without_a_current_version_the_whole_tenant_is_indexed() -> None:
    store, upstream = SqliteStore(":memory:"), Upstreams()
    indexer = Indexer(store, upstream, approvals=SqliteApprovalStore(":memory:"))
    await indexer.index_server("t", config(), "crm")
    assert sorted(upstream.asked) == ["crm", "docs", "mail"]


async def test_two_servers_reindexed_at_once_both_land() -> None:
    indexer, store, upstream, _ = await indexed()
    upstream.tools["crm"].append(entry("close", "Close an account."))
    upstream.tools["mail"].append(entry("draft", "Draft a mail."))
    # Both runs read the same current version; the second to publish conflicts and runs again.
    await asyncio.gather(
        indexer.index_server("t", config(), "crm"), indexer.index_server("t", config(), "mail")
    )
    after = store.load_current("t")
    assert after is not None
    assert {"crm:close", "mail:draft"} <= {t.tool.key for t in after.tools}


class OfferingUpstreams(Upstreams):
    """Also lists one resource per server (what a scoped reindex must carry over for the others)."""

    async def list_offerings(self, server: ServerConfig) -> Any:
        from foldgate.upstream.offerings import Offerings

        resource = {"uri": f"file:///{server.name}/readme", "name": f"{server.name} readme"}
        return Offerings(items={"resource": [resource]})


async def test_a_scoped_reindex_keeps_the_other_servers_prompts_and_resources() -> None:
    store, upstream = SqliteStore(":memory:"), OfferingUpstreams()
    indexer = Indexer(store, upstream, approvals=SqliteApprovalStore(":memory:"))
    await indexer.index_tenant("t", config())
    before = store.load_current("t")
    assert before is not None
    assert {i.server for i in before.offerings} == {"crm", "docs", "mail"}
    upstream.tools["crm"].append(entry("close", "Close an account."))
    await indexer.index_server("t", config(), "crm")
    after = store.load_current("t")
    assert after is not None
    assert {i.server for i in after.offerings} == {"crm", "docs", "mail"}
