"""Browsing without a query: ``retrieve_tools`` with an empty query (or ``browse: true``) pages through
the caller's visible tools grouped by server.

Agents that cannot name what they need can still look around. A page is the same size as a search
answer (``limit`` tools, the tenant's ``tools_limit`` by default) in the same compact hit format (the
first hits signed, the rest one line each), so it costs what a search answer costs. Servers come in
the tenant config's order and tools in their upstream's listing order, so pages are deterministic and a
cursor (the position of the next tool) continues where the last page stopped. Each server appears once
per page with a one-line summary of what it offers (over the tools this caller may see and the filters
admit); ``server`` opens one server's tools.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

from foldgate.errors import InvalidRequestError
from foldgate.model.catalog import IndexedTool, Tier

__all__ = ["browse_answer", "cursor_offset", "server_summary"]

# A cursor is "b" and the position of the page's first tool: opaque to agents, checked here.
_CURSOR_PREFIX: Final = "b"
_MAX_OFFSET: Final = 1_000_000
# The summary names this many of a server's tools as examples.
_EXAMPLES: Final = 3

Entries = Callable[[Sequence[IndexedTool]], tuple[list[dict[str, Any]], list[str]]]


def cursor_offset(cursor: Any) -> int:
    """The position a ``cursor`` from an earlier page continues at; 0 without one."""
    if cursor is None:
        return 0
    digits = cursor[len(_CURSOR_PREFIX) :] if isinstance(cursor, str) else ""
    if not (isinstance(cursor, str) and cursor.startswith(_CURSOR_PREFIX) and digits.isascii()):
        raise InvalidRequestError("retrieve_tools: cursor must be a next_cursor from an earlier page")
    if not digits.isdigit() or int(digits) > _MAX_OFFSET:
        raise InvalidRequestError("retrieve_tools: cursor must be a next_cursor from an earlier page")
    return int(digits)


def server_summary(tools: Sequence[IndexedTool], tier: Callable[[IndexedTool], Tier]) -> str:
    """One line on what a server offers: how many tools of which tiers, and a few of their names."""
    counts = {"read": 0, "write": 0, "destructive": 0}
    for t in tools:
        counts[tier(t)] += 1
    tiers = ", ".join(f"{n} {name}" for name, n in counts.items() if n)
    examples = ", ".join(t.tool.name for t in tools[:_EXAMPLES])
    more = ", …" if len(tools) > _EXAMPLES else ""
    return f"{len(tools)} tool{'s' if len(tools) != 1 else ''} ({tiers}): {examples}{more}"


def browse_answer(
    tools: Sequence[IndexedTool],
    order: Sequence[str],
    tier: Callable[[IndexedTool], Tier],
    entries: Entries,
    *,
    offset: int,
    limit: int,
) -> dict[str, Any]:
    """One page of ``tools`` (visible and admitted) grouped by server in ``order``; ``entries`` renders
    a page's tools as search hits and tail lines, in page order."""
    rank = {name: i for i, name in enumerate(order)}
    by_server: dict[str, list[IndexedTool]] = {}
    for t in tools:
        by_server.setdefault(t.server, []).append(t)
    ordered = [
        t
        for server in sorted(by_server, key=lambda s: (rank.get(s, len(rank)), s))
        for t in by_server[server]
    ]
    page = ordered[offset : offset + limit]
    hits, tail = entries(page)
    rendered: list[dict[str, Any] | str] = [*hits, *tail]
    groups: list[dict[str, Any]] = []
    for t, entry in zip(page, rendered, strict=True):
        if not groups or groups[-1]["server"] != t.server:
            summary = server_summary(by_server[t.server], tier)
            groups.append({"server": t.server, "summary": summary})
        groups[-1].setdefault("tools" if isinstance(entry, dict) else "more", []).append(entry)
    body: dict[str, Any] = {"servers": groups}
    if offset + limit < len(ordered):
        body["next_cursor"] = f"{_CURSOR_PREFIX}{offset + limit}"
    if not groups:
        body["hint"] = "no tools to browse here; try without server, cursor or filters"
    return body
