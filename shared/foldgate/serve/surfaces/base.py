"""What a surface is and what it is handed: the caller's view and the shared call machinery.

A surface never sees the Gateway: it gets a :class:`CallContext` per call (the view, the call path,
the search, the result pager), so each surface module holds its tool definitions, argument parsers
and handlers together and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from foldgate.serve.calls import ToolCaller
from foldgate.serve.paging import ResultPager
from foldgate.serve.searchers import Searcher, SearcherCache
from foldgate.serve.views import TenantView

__all__ = ["CallContext", "Surface"]


@dataclass(frozen=True)
class CallContext:
    """Everything a surface may use to answer one call."""

    view: TenantView
    caller: ToolCaller
    searchers: SearcherCache
    results: ResultPager | None = None

    def searcher(self) -> Searcher:
        """Search over the view's catalog version, ranked over the tools this caller sees."""
        return self.searchers.for_view(self.view)


class Surface(Protocol):
    """One MCP surface: a tools listing, default instructions, and the tools/call handler."""

    #: ``initialize`` instructions when the operator set none (None: the direct surface's default).
    instructions: str | None

    def listing_json(self, view: TenantView) -> str:
        """The surface's ``tools`` array as JSON text for this view (pre-rendered, cached)."""
        ...

    async def call(self, ctx: CallContext, name: str, arguments: Any) -> dict[str, Any]:
        """Answer a tools/call; always a CallToolResult wire dict (errors included)."""
        ...

    async def aclose(self) -> None:
        """Release what the surface holds (a worker process), if anything."""
        ...
