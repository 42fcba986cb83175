"""The SSRF guard with pooled sessions: every new connection is pinned, and a rebinding name is refused.

The upstream's name answers loopback once, then (as an attacker's DNS would) the metadata address. The
pooled client must never look the name up again on its own, and once the guard's cached answer
expires, the rebound name must be refused before anything reaches the upstream.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.dev.bench.wire_proxy import WireProxy, wire_proxy
from foldgate.errors import UpstreamError
from foldgate.upstream import net_guard
from foldgate.upstream.client import UpstreamClient
from tests.procs import Replay, replay

NAME = "crm.rebind.test"


@pytest.fixture(scope="module")
def rp() -> Iterator[Replay]:
    with replay() as running:
        yield running


@pytest.fixture
def proxy(rp: Replay) -> Iterator[WireProxy]:
    parts = urlsplit(rp.urls["crm"])
    with wire_proxy(parts.hostname or "127.0.0.1", parts.port or 80) as running:
        yield running


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    real = socket.getaddrinfo
    seen: list[str] = []

    def resolver(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == NAME:
            seen.append(host)
            return real("127.0.0.1" if len(seen) == 1 else "169.254.169.254", port, *args, **kwargs)
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolver)
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    net_guard.clear_cache()
    yield seen
    net_guard.clear_cache()


async def test_new_pooled_connections_are_pinned_and_a_rebound_name_is_refused(
    rp: Replay, proxy: WireProxy, lookups: list[str]
) -> None:
    path = urlsplit(rp.urls["crm"]).path
    cfg = ServerConfig(name="crm", url=f"http://{NAME}:{proxy.port}{path}", timeout_s=10)
    client = UpstreamClient(allow_private=True)
    read_only = {"readOnlyHint": True}
    try:
        await client.call_tool(cfg, "find_contact", {"query": "ada"}, annotations=read_only)
        # Cut the connection under a warm session: the retry dials a new connection (new session).
        proxy.drop_response["tools/call"] = 1
        await client.call_tool(cfg, "find_contact", {"query": "bob"}, annotations=read_only)
        assert proxy.connections >= 2
        assert lookups == [NAME]  # the new connection went to the checked address: no fresh lookup

        net_guard.clear_cache()  # the guard's answer expired; the name now rebinds to the metadata service
        proxy.reset()
        with pytest.raises(UpstreamError, match="cloud metadata service"):
            await client.call_tool(cfg, "find_contact", {"query": "eve"}, annotations=read_only)
        assert proxy.count() == 0  # the warm session is not used past the refusal
        assert proxy.connections == 0
    finally:
        await client.aclose()
