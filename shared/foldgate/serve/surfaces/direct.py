"""The direct surface (``/mcp/all``, and ``/mcp`` in ``direct`` routing): every visible tool, listed full
or deferred per the tenant's policy, plus ``describe_tool``; calls go straight to the tool."""

from __future__ import annotations

from typing import Any, Final

from foldgate.model.listing import join_fragments
from foldgate.serve.results import unknown_tool
from foldgate.serve.surfaces.base import CallContext
from foldgate.serve.surfaces.describe import DESCRIBE_TOOL_FRAGMENT, DESCRIBE_TOOL_NAME, describe
from foldgate.serve.views import TenantView

__all__ = ["DirectSurface"]

_MEMO: Final = "direct.listing"


class DirectSurface:
    """Lists the fleet itself; the listing is concatenated pre-rendered fragments, once per view."""

    instructions: str | None = None

    def listing_json(self, view: TenantView) -> str:
        """``describe_tool`` first, then every visible tool (deferred or full as the plan says)."""
        listing = view.memo.get(_MEMO)
        if listing is None:
            parts = [DESCRIBE_TOOL_FRAGMENT]
            parts.extend(
                t.deferred_fragment if view.is_deferred(t) else t.full_fragment for t in view.visible
            )
            listing = view.memo[_MEMO] = join_fragments(parts)
        return str(listing)

    async def call(self, ctx: CallContext, name: str, arguments: Any) -> dict[str, Any]:
        """describe_tool, or a visible tool by either id form."""
        if name == DESCRIBE_TOOL_NAME:
            return describe(ctx.view, arguments)
        tool = ctx.view.resolve(name)
        if tool is None:
            return unknown_tool(name, "tools/list shows every callable tool")
        return await ctx.caller.call(ctx.view, tool, arguments)

    async def aclose(self) -> None:
        """Nothing to release."""
