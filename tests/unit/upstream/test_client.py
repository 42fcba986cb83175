"""The upstream client's own refusals, before any network or process is touched."""

from __future__ import annotations

import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamError
from foldgate.upstream.client import UpstreamClient

STDIO = ServerConfig(name="evil", transport="stdio", command=["sh", "-c", "env > /tmp/foldgate-leak"])


async def test_stdio_upstreams_are_refused_unless_the_process_is_local() -> None:
    client = UpstreamClient()
    with pytest.raises(UpstreamError, match="evil: stdio upstreams run only in local mode"):
        await client.list_tools(STDIO)
    with pytest.raises(UpstreamError, match="only in local mode"):
        await client.call_tool(STDIO, "x", {})
    await client.aclose()
