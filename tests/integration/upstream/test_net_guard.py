"""The SSRF guard in the real client path: refused targets never see a request, allowed ones still work."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.errors import UpstreamError
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream import net_guard
from foldgate.upstream.client import UpstreamClient
from tests.procs import Replay, replay


@pytest.fixture(scope="module")
def rp() -> Iterator[Replay]:
    with replay() as running:
        yield running


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    net_guard.clear_cache()
    yield
    net_guard.clear_cache()


def server(name: str, url: str) -> ServerConfig:
    """A server config as given, unchecked: a metadata or link-local literal is refused when a config
    is read (model/address_rule.py), and this guard is the one left for names that resolve there."""
    return ServerConfig.model_construct(name=name, url=url, timeout_s=10)


@pytest.mark.parametrize("allow_private", [False, True])
async def test_metadata_endpoint_is_refused_before_any_connection(allow_private: bool) -> None:
    client = UpstreamClient(allow_private=allow_private)
    with pytest.raises(UpstreamError) as info:
        await client.list_tools(server("meta", "http://169.254.169.254/mcp"))
    assert info.value.message == (
        "meta: upstream host '169.254.169.254' is refused: it resolves to the cloud metadata service"
    )
    with pytest.raises(UpstreamError, match=r"^meta: upstream host .* cloud metadata service$"):
        await client.call_tool(server("meta", "http://169.254.169.254/mcp"), "x", {})


async def test_loopback_is_refused_when_private_upstreams_are_not_allowed(rp: Replay) -> None:
    rp.clear()
    client = UpstreamClient(allow_private=False)
    crm = server("crm", rp.urls["crm"])
    with pytest.raises(UpstreamError) as info:
        await client.list_tools(crm)
    assert info.value.message == (
        "crm: upstream host '127.0.0.1' is refused: it resolves to a loopback address "
        "(private upstreams are not allowed here)"
    )
    with pytest.raises(UpstreamError, match="loopback"):
        await client.call_tool(crm, "find_contact", {"query": "ada"})
    assert rp.calls() == []


async def test_loopback_replay_is_reachable_when_private_upstreams_are_allowed(rp: Replay) -> None:
    rp.clear()
    client = UpstreamClient(allow_private=True)
    crm = server("crm", rp.urls["crm"])
    listing = await client.list_tools(crm)
    assert "find_contact" in {t["name"] for t in listing.tools}
    result = await client.call_tool(crm, "find_contact", {"query": "ada"})
    assert "content" in result
    assert [c["tool"] for c in rp.calls()] == ["find_contact"]


async def test_the_indexer_reports_a_refused_upstream(rp: Replay) -> None:
    config = parse_tenant_config({"servers": [{"name": "crm", "url": rp.urls["crm"]}]})
    # Refused at save too; here as if a name had resolved there (see server()).
    meta = server("meta", "http://169.254.169.254/latest/meta-data/")
    config = config.model_copy(update={"servers": [*config.servers, meta]})
    store = SqliteStore(":memory:")
    report = await Indexer(store, UpstreamClient(allow_private=True)).index_tenant("default", config)
    assert report.servers["crm"]["healthy"]
    assert not report.servers["meta"]["healthy"]
    assert "cloud metadata" in str(report.servers["meta"])
    report = await Indexer(store, UpstreamClient(allow_private=False)).index_tenant("default", config)
    assert not report.servers["crm"]["healthy"]
    assert "loopback" in str(report.servers["crm"])


async def test_connections_go_to_the_checked_address_not_a_fresh_lookup(
    rp: Replay, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name answered once (loopback) and then never again: only a pinned client can still connect."""
    real = socket.getaddrinfo
    answered: list[str] = []

    def resolver(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "crm.pinned.test":
            if answered:  # every later query fails (or, for an attacker, would rebind)
                raise socket.gaierror(socket.EAI_NONAME, "gone")
            answered.append(host)
            return real("127.0.0.1", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    parts = urlsplit(rp.urls["crm"])
    url = urlunsplit(parts._replace(netloc=f"crm.pinned.test:{parts.port}"))
    listing = await UpstreamClient(allow_private=True).list_tools(server("crm", url))
    assert listing.tools
    assert answered == ["crm.pinned.test"]
