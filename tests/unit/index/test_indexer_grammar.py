"""A catalog stored under signature grammar v1 is re-rendered and republished once under v2."""

from __future__ import annotations

from dataclasses import replace

from foldgate.index.indexer import catalog_from_tools, index_tool
from foldgate.model.catalog import CatalogVersion
from foldgate.model.signature import compile_signature
from foldgate.model.token_count import get_counter
from foldgate.model.tool import tool_from_wire

ACCOUNT = {
    "name": "open_account",
    "description": "Open an account.",
    "inputSchema": {
        "type": "object",
        "properties": {"account": {"type": "object", "properties": {"id": {"type": "string"}}}},
        "required": ["account"],
    },
}
PLAIN = {"name": "ping", "description": "Ping.", "inputSchema": {"type": "object", "properties": {}}}


def _as_v1(version: CatalogVersion) -> CatalogVersion:
    """The same catalog as an indexer before grammar v2 stored it."""
    tools = []
    for t in version.tools:
        v1 = compile_signature(t.tool.input_schema, inline=False)
        tools.append(replace(t, signature=v1.params, lossy=v1.lossy))
    return replace(version, tools=tuple(tools))


def test_a_tool_indexed_under_v1_is_rendered_again_not_reused() -> None:
    tool = tool_from_wire("bank", ACCOUNT)
    count = get_counter("cl100k")
    current = index_tool(tool, "bank__open_account", None, count)
    assert current.signature == "(account*:{id:str})"
    old = replace(current, signature="(account*~:obj)", lossy=True)
    again = index_tool(tool, "bank__open_account", None, count, reuse=old)
    assert (again.signature, again.lossy) == ("(account*:{id:str})", False)
    assert index_tool(tool, "bank__open_account", None, count, reuse=current) is current


def test_inline_signatures_change_the_fingerprint_only_where_they_occur() -> None:
    both = catalog_from_tools("t", [tool_from_wire("bank", ACCOUNT), tool_from_wire("bank", PLAIN)])
    assert both.fingerprint != _as_v1(both).fingerprint  # the v1 catalog is republished in v2
    plain = catalog_from_tools("t", [tool_from_wire("bank", PLAIN)])
    assert plain.fingerprint == _as_v1(plain).fingerprint  # nothing inline: nothing to republish
