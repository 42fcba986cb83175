"""An in-process upstream whose listing the test sets: an upstream that changes its tools between runs
(a rug pull, a fix, a change reverted), for the indexer's hold and approval tests."""

from __future__ import annotations

from typing import Any

from foldgate.config.tenant import ServerConfig
from foldgate.upstream.client import Listing, UpstreamClient


class ListingUpstream(UpstreamClient):
    """Lists whatever the test sets in ``tools`` (copied, so a later edit is a new listing)."""

    def __init__(self) -> None:
        super().__init__()
        self.tools: list[dict[str, Any]] = []

    async def list_tools(self, server: ServerConfig) -> Listing:
        return Listing(tools=[dict(t) for t in self.tools])
