"""The search surface (``/mcp/call``): a constant handful of meta-tools instead of the whole fleet.

The agent searches with ``retrieve_tools``, then calls through the variant that matches the tool's
permission tier (``call_tool_read`` / ``call_tool_write`` / ``call_tool_destructive``), so a client can
gate destructive calls on the tool name alone. ``describe_tool`` and ``read_cache`` complete it.
Only tools visible to the caller are ever found, described or called.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from foldgate.errors import FoldgateError, InvalidRequestError, NotFoundError, WrongVariantError
from foldgate.model.catalog import IndexedTool, Tier
from foldgate.model.jsonutil import compact
from foldgate.model.listing import join_fragments
from foldgate.serve.browse import browse_answer, cursor_offset
from foldgate.serve.recording import current
from foldgate.serve.results import error_result, json_result, unknown_tool
from foldgate.serve.surfaces.base import CallContext
from foldgate.serve.surfaces.describe import DESCRIBE_TOOL, describe
from foldgate.serve.views import TenantView

__all__ = [
    "CALL_INSTRUCTIONS",
    "CALL_VARIANTS",
    "READ_CACHE_NAME",
    "RETRIEVE_TOOLS_NAME",
    "VARIANT_OF",
    "SearchRequest",
    "SearchSurface",
    "call_surface_listing",
    "compact_signature",
    "hit_entry",
    "needs_describe",
    "page_entries",
    "parse_call_arguments",
    "parse_read_cache_arguments",
    "parse_retrieve_arguments",
    "retrieve_answer",
    "retrieve_tool",
    "tail_line",
    "text_result",
]

RETRIEVE_TOOLS_NAME: Final = "retrieve_tools"
READ_CACHE_NAME: Final = "read_cache"
MAX_LIMIT: Final = 100
CALL_VARIANTS: Final[dict[str, Tier]] = {
    "call_tool_read": "read",
    "call_tool_write": "write",
    "call_tool_destructive": "destructive",
}
VARIANT_OF: Final[dict[Tier, str]] = {tier: name for name, tier in CALL_VARIANTS.items()}
# A compact hit's description: the first sentence, cut here. Measured with `foldgate bench context`
# (cl100k, hybrid) together with the rest of the compact answer, see hit_entry.
_SUMMARY_CHARS: Final = 120
# A tail line's description is cut shorter: it is there to recognise the tool, not to call it.
_TAIL_SUMMARY_CHARS: Final = 80
# Signatures longer than this are cut in a compact hit (ending in "…)"): the tool is then described
# before it is called, like a lossy one.
_SIGNATURE_CHARS: Final = 160
# Compact hits past this rank carry no signature (describe_tool gives it): the head of a page is what
# an agent calls, the tail is there to be found. On the tuning tasks this takes a tail hit from ~67 to
# ~48 tokens, so a 3,000-token answer holds 40 tools instead of 30 (see the README's context table).
_SIGNED_HITS: Final = 10
# A Latin sentence ends before a space; a CJK one right after its mark (no space follows it).
_SENTENCE_END = re.compile("(?<=[.!?])\\s|(?<=[\u3002\uff01\uff1f])")

_FILTERS: Final = ("read_only_only", "exclude_destructive", "exclude_open_world")

CALL_INSTRUCTIONS: Final = (
    "This gateway fronts many MCP tools behind a search. Find tools with retrieve_tools(query=...), "
    "then call one with the call_tool_* variant its `call_with` (or its `more` line's tier) names: "
    "call_tool_read(name=..., arguments={...}) and likewise call_tool_write / call_tool_destructive. "
    "describe_tool(tool_ids=[...]) returns a tool's full input schema. A call with invalid arguments is "
    "answered with the real schema: fix the arguments and retry. A cut result says how to read the rest "
    "with read_cache."
)


def retrieve_tool(default_limit: int) -> dict[str, Any]:
    """The retrieve_tools entry (its ``limit`` default is the tenant's ``tools_limit``)."""
    return {
        "name": RETRIEVE_TOOLS_NAME,
        "description": (
            "Find tools for a task (pass the whole task), best first. tools[]: call_with is the "
            "call_tool_* to use; call from signature unless it has ~ or ends in … (then describe_tool). "
            'more[]: "name (tier): description"; describe_tool, then call_tool_<tier>. Several needs: '
            "intents gives each need's 1-based positions (tools, then more). Nothing fits: other words. "
            "No query: browse by server (next_cursor pages on)."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": default_limit},
                "detail": {
                    "type": "string",
                    "enum": ["compact", "full"],
                    "default": "compact",
                    "description": "full: whole descriptions and input schemas, all in tools.",
                },
                "browse": {"type": "boolean"},
                "server": {"type": "string"},
                "cursor": {"type": "string"},
                "read_only_only": {"type": "boolean"},
                "exclude_destructive": {"type": "boolean"},
                "exclude_open_world": {
                    "type": "boolean",
                    "description": "Skip tools not marked closed-world.",
                },
            },
            "additionalProperties": False,
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    }


def _call_tool(name: str, tier: Tier) -> dict[str, Any]:
    what = {"read": "a read-only", "write": "a non-destructive write", "destructive": "a destructive"}[tier]
    annotations: dict[str, Any] = {"readOnlyHint": tier == "read", "openWorldHint": True}
    if tier != "read":
        annotations["destructiveHint"] = tier == "destructive"
    return {
        "name": name,
        "description": f"Call {what} tool whose call_with is {name}. Arguments are validated first.",
        "inputSchema": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "arguments": {"type": "object"}},
            "required": ["name"],
            "additionalProperties": False,
        },
        "annotations": annotations,
    }


READ_CACHE_TOOL: Final[dict[str, Any]] = {
    "name": READ_CACHE_NAME,
    "description": "Read on in a cut tool result: the key from its note, the offset to continue from.",
    "inputSchema": {
        "type": "object",
        "properties": {
            "key": {"type": "string", "minLength": 1},
            "offset": {"type": "integer", "minimum": 0, "default": 0},
            "limit": {"type": "integer", "minimum": 1},
        },
        "required": ["key"],
        "additionalProperties": False,
    },
    "annotations": {"readOnlyHint": True, "openWorldHint": False},
}


class SearchRequest:
    """Validated retrieve_tools arguments: a search, or a browse page (no query, or ``browse``) from
    ``offset``; ``server`` limits either to one server."""

    def __init__(
        self,
        query: str,
        limit: int,
        full: bool,
        filters: dict[str, bool],
        *,
        browse: bool = False,
        server: str | None = None,
        offset: int = 0,
    ) -> None:
        self.query = query
        self.limit = limit
        self.full = full
        self.filters = filters
        self.browse = browse
        self.server = server
        self.offset = offset

    def admits(self, tool: IndexedTool, tier: Tier) -> bool:
        """Whether the filters let this tool of this effective tier through (MCP's defaults for absent
        hints)."""
        if self.server is not None and tool.server != self.server:
            return False
        ann = tool.tool.annotations or {}
        if self.filters["read_only_only"] and tier != "read":
            return False
        if self.filters["exclude_destructive"] and tier == "destructive":
            return False
        return not (self.filters["exclude_open_world"] and ann.get("openWorldHint") is not False)


def _object(arguments: Any, tool: str, allowed: set[str]) -> dict[str, Any]:
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        raise InvalidRequestError(f"{tool} arguments must be an object")
    unknown = sorted(set(arguments) - allowed)
    if unknown:
        raise InvalidRequestError(
            f"{tool} does not take {', '.join(unknown)}; it takes {', '.join(sorted(allowed))}"
        )
    return arguments


def _int(value: Any, name: str, tool: str, low: int, high: int | None = None) -> int:
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or value < low
        or (high is not None and value > high)
    ):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        raise InvalidRequestError(f"{tool}: {name} must be an integer {bound}")
    return value


def parse_retrieve_arguments(arguments: Any, default_limit: int) -> SearchRequest:
    """Validate retrieve_tools arguments; InvalidRequestError says what to fix."""
    args = _object(
        arguments, RETRIEVE_TOOLS_NAME, {"query", "limit", "detail", "browse", "server", "cursor", *_FILTERS}
    )
    query = args.get("query", "")
    if not isinstance(query, str):
        raise InvalidRequestError("retrieve_tools: query must be a string")
    browse = args.get("browse", False)
    if not isinstance(browse, bool):
        raise InvalidRequestError("retrieve_tools: browse must be true or false")
    browse = browse or not query.strip()
    server = args.get("server")
    if server is not None and (not isinstance(server, str) or not server):
        raise InvalidRequestError("retrieve_tools: server must be a server's name")
    if "cursor" in args and not browse:
        raise InvalidRequestError("retrieve_tools: cursor continues a browse (no query, or browse: true)")
    offset = cursor_offset(args.get("cursor"))
    limit = _int(args.get("limit", default_limit), "limit", RETRIEVE_TOOLS_NAME, 1, MAX_LIMIT)
    detail = args.get("detail", "compact")
    if detail not in ("compact", "full"):
        raise InvalidRequestError("retrieve_tools: detail must be 'compact' or 'full'")
    filters = {}
    for name in _FILTERS:
        value = args.get(name, False)
        if not isinstance(value, bool):
            raise InvalidRequestError(f"retrieve_tools: {name} must be true or false")
        filters[name] = value
    return SearchRequest(
        query.strip()[:2000], limit, detail == "full", filters, browse=browse, server=server, offset=offset
    )


def parse_call_arguments(variant: str, arguments: Any) -> tuple[str, Any]:
    """(tool name, its arguments) of a call_tool_* call."""
    args = _object(arguments, variant, {"name", "arguments"})
    name = args.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidRequestError(f"{variant}: name must be the tool's name from retrieve_tools")
    return name, args.get("arguments")


def parse_read_cache_arguments(arguments: Any, default_limit: int) -> tuple[str, int, int]:
    """(key, offset, limit) of a read_cache call."""
    args = _object(arguments, READ_CACHE_NAME, {"key", "offset", "limit"})
    key = args.get("key")
    if not isinstance(key, str) or not key:
        raise InvalidRequestError("read_cache: key must be the key from the truncation note")
    offset = _int(args.get("offset", 0), "offset", READ_CACHE_NAME, 0)
    limit = _int(args.get("limit", default_limit), "limit", READ_CACHE_NAME, 1)
    return key, offset, min(limit, default_limit)  # a page is never longer than the response limit


def _summary(text: str, chars: int = _SUMMARY_CHARS) -> str:
    """The first sentence of the first line, at most ``chars`` characters."""
    first = text.strip().split("\n", 1)[0]
    first = _SENTENCE_END.split(first, 1)[0].rstrip()
    return first if len(first) <= chars else first[: chars - 1].rstrip() + "…"


def compact_signature(tool: IndexedTool) -> str:
    """The hit's signature, cut after ``_SIGNATURE_CHARS`` characters (then it ends in ``…)``)."""
    signature = tool.tool.name + tool.signature
    if len(signature) <= _SIGNATURE_CHARS:
        return signature
    return signature[: _SIGNATURE_CHARS - 2].rstrip(", ") + "…)"


def needs_describe(tool: IndexedTool, rank: int = 1) -> bool:
    """Whether an agent must describe this tool before calling it from a compact hit at ``rank``."""
    return rank > _SIGNED_HITS or bool(tool.lossy) or len(tool.tool.name + tool.signature) > _SIGNATURE_CHARS


def hit_entry(tool: IndexedTool, tier: Tier, rank: int, *, full: bool) -> dict[str, Any]:
    """One retrieve_tools hit: enough to call a flat tool without describing it.

    A compact hit is name, ``call_with``, signature (up to rank ``_SIGNED_HITS``) and a one-sentence
    summary: its position in the answer is its rank, the server is the name's prefix and the tier is
    in ``call_with``, so rank, server and annotations are left to ``detail: full``. On the tuning
    tasks (cl100k) this takes a hit from ~75 to ~45-65 tokens, so twice as many tools fit in the
    same context.
    """
    t = tool.tool
    if not full:
        hit: dict[str, Any] = {"name": tool.published, "call_with": VARIANT_OF[tier]}
        if rank <= _SIGNED_HITS:
            hit["signature"] = compact_signature(tool)
        hit["description"] = _summary(t.description)
        return hit
    entry: dict[str, Any] = {
        "name": tool.published,
        "server": t.server,
        "rank": rank,
        "call_with": VARIANT_OF[tier],
        "description": t.description,
        "signature": t.name + tool.signature,
    }
    if t.annotations:
        entry["annotations"] = t.annotations
    entry["input_schema"] = t.input_schema
    return entry


def page_entries(
    tools: Sequence[IndexedTool], tier: Callable[[IndexedTool], Tier], *, full: bool
) -> tuple[list[dict[str, Any]], list[str]]:
    """A page's ``tools`` entries and ``more`` lines: compact pages sign their first ``_SIGNED_HITS``
    hits and put the rest on one line each; a full page has every hit as a whole entry."""
    head = tools if full else tools[:_SIGNED_HITS]
    entries = [hit_entry(t, tier(t), rank, full=full) for rank, t in enumerate(head, 1)]
    return entries, [tail_line(t, tier(t)) for t in tools[len(head) :]]


def tail_line(tool: IndexedTool, tier: Tier) -> str:
    """A compact hit past the signed head, as one line: ``name (tier): first sentence``.

    The tail of a page is there to be found, not called as is (it is described first), so it carries
    no signature and no JSON keys: on the tuning tasks (cl100k) a tail hit costs ~30 tokens instead
    of ~48 as an object, and a 3,000-token answer holds about twice the tools.
    """
    return f"{tool.published} ({tier}): {_summary(tool.tool.description, _TAIL_SUMMARY_CHARS)}"


def retrieve_answer(
    entries: list[dict[str, Any]],
    intents: Sequence[tuple[str, Sequence[int]]] | None = None,
    more: Sequence[str] = (),
) -> dict[str, Any]:
    """The retrieve_tools body: the hits, the tail lines, and for a multi-need request each need with
    its positions (1-based over ``tools``, then ``more``).

    The query is not echoed (the agent wrote it) and a need names its tools by 1-based position
    rather than repeating their names: on a long task text both were a third of the answer.
    """
    body: dict[str, Any] = {"tools": entries}
    if more:
        body["more"] = list(more)
    if intents:
        body["intents"] = [{"need": need, "tools": list(ranks)} for need, ranks in intents]
    if not entries:
        body["hint"] = "no tool matched; try other words or fewer filters"
    return body


def text_result(body: dict[str, Any]) -> dict[str, Any]:
    """A CallToolResult carrying ``body`` once, as compact JSON text (no ``structuredContent``).

    retrieve_tools declares no ``outputSchema``, so structured content is optional; sending it too
    would put every hit in the agent's context twice.
    """
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
    return {"content": [{"type": "text", "text": text}], "isError": False}


# ---- handlers ---------------------------------------------------------------------------------

Handler = Callable[[CallContext, str, Any], Awaitable[dict[str, Any]]]


async def _retrieve(ctx: CallContext, name: str, arguments: Any) -> dict[str, Any]:
    view = ctx.view
    request = parse_retrieve_arguments(arguments, view.config.tools_limit)
    if request.browse:
        admitted = [t for t in view.visible if request.admits(t, view.tier(t))]
        order = [s.name for s in view.config.servers]
        body = browse_answer(
            admitted,
            order,
            view.tier,
            lambda page: page_entries(page, view.tier, full=request.full),
            offset=request.offset,
            limit=request.limit,
        )
        return text_result(body)

    def allowed(key: str) -> bool:
        tool = view.resolve(key)  # visibility first: nothing invisible is ever scored into a page
        return tool is not None and request.admits(tool, view.tier(tool))

    # Multi-need requests are searched need by need; the search package loads with the first search.
    from foldgate.search.multi import intent_ranks, search_with_intents

    hits, groups = search_with_intents(ctx.searcher(), request.query, limit=request.limit, allowed=allowed)
    resolved = [(hit, tool) for hit in hits if (tool := view.resolve(hit.key)) is not None]
    # Ranks, not scores: a raw score carries corpus statistics of tools this caller cannot see.
    entries, more = page_entries([t for _, t in resolved], view.tier, full=request.full)
    intents = intent_ranks([hit for hit, _ in resolved], groups) if groups else None
    return text_result(retrieve_answer(entries, intents, more))


async def _call_variant(ctx: CallContext, variant: str, arguments: Any) -> dict[str, Any]:
    tool_name, tool_args = parse_call_arguments(variant, arguments)
    observed = current()
    if observed is not None:
        observed.target("", tool_name)  # the name asked for, until it resolves to a visible tool
    tool = ctx.view.resolve(tool_name)
    if tool is None:
        raise NotFoundError(f"unknown tool: {tool_name}")
    tier = ctx.view.tier(tool)
    if observed is not None:
        observed.target(tool.server, tool.tool.name, tier)
    if tier != CALL_VARIANTS[variant]:
        right = VARIANT_OF[tier]
        message = f"{tool.published} is a {tier} tool: call it with {right}, not {variant}"
        return error_result(WrongVariantError(message), call_with=right)
    result = await ctx.caller.call(ctx.view, tool, tool_args)
    if ctx.results is None:
        return result
    answer = ctx.results.truncate(
        result, limit=ctx.view.config.tool_response_limit, stamp=ctx.view.principal.stamp
    )
    if observed is not None and answer is not result:
        observed.cut = True
    return answer


async def _describe(ctx: CallContext, name: str, arguments: Any) -> dict[str, Any]:
    return describe(ctx.view, arguments)


async def _read_cache(ctx: CallContext, name: str, arguments: Any) -> dict[str, Any]:
    view = ctx.view
    key, offset, limit = parse_read_cache_arguments(arguments, view.config.tool_response_limit)
    if ctx.results is None:
        raise NotFoundError("no cached result for this key (it may have expired)")
    return json_result(ctx.results.read(key, offset, limit, stamp=view.principal.stamp))


def _variant_definition(name: str) -> Callable[[int], dict[str, Any]]:
    tier = CALL_VARIANTS[name]
    return lambda _limit: _call_tool(name, tier)


# The surface's meta-tools, in listing order: name -> (definition for a tools_limit, handler).
# Adding a meta-tool is one entry here plus its definition and handler above.
META_TOOLS: Final[dict[str, tuple[Callable[[int], dict[str, Any]], Handler]]] = {
    RETRIEVE_TOOLS_NAME: (retrieve_tool, _retrieve),
    **{name: (_variant_definition(name), _call_variant) for name in CALL_VARIANTS},
    DESCRIBE_TOOL["name"]: (lambda _: DESCRIBE_TOOL, _describe),
    READ_CACHE_NAME: (lambda _: READ_CACHE_TOOL, _read_cache),
}


def call_surface_listing(default_limit: int) -> str:
    """The surface's ``tools`` array as JSON text (constant per ``tools_limit``)."""
    return join_fragments(compact(definition(default_limit)) for definition, _ in META_TOOLS.values())


class SearchSurface:
    """The search surface: the listing is constant per ``tools_limit``; calls dispatch on META_TOOLS."""

    instructions: str | None = CALL_INSTRUCTIONS

    def __init__(self) -> None:
        self._listings: dict[int, str] = {}

    def listing_json(self, view: TenantView) -> str:
        """The meta-tools, with retrieve_tools' default limit set to the tenant's tools_limit."""
        limit = view.config.tools_limit
        listing = self._listings.get(limit)
        if listing is None:
            listing = self._listings[limit] = call_surface_listing(limit)
        return listing

    async def call(self, ctx: CallContext, name: str, arguments: Any) -> dict[str, Any]:
        """One meta-tool call; argument and lookup errors come back as tool errors to act on."""
        meta = META_TOOLS.get(name)
        if meta is None:
            return unknown_tool(
                name, "find tools with retrieve_tools, then call them with the call_tool_* variant it names"
            )
        try:
            return await meta[1](ctx, name, arguments)
        except FoldgateError as exc:
            return error_result(exc)

    async def aclose(self) -> None:
        """Nothing to release."""
