"""Render ``tools/list`` entries (full and deferred), pre-serialized fragments and instructions.

Entries carry exactly what the upstream declared: no default annotations are invented (that alone
would cost ~25 tokens a tool), and the name, title, annotations and ``_meta`` of a deferred entry
are byte-identical to its full entry. Fragments are compact JSON rendered once by the indexer, so
a listing request only joins strings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from foldgate.model.jsonutil import compact
from foldgate.model.signature import Signature
from foldgate.model.tool import Tool

__all__ = [
    "DEFERRED_SCHEMA",
    "SIGNATURE_LEGEND",
    "EntryFragments",
    "deferred_entry",
    "fragments_for",
    "full_entry",
    "instructions_text",
    "join_fragments",
    "prefixed_description",
]

DEFERRED_SCHEMA: Final[dict[str, Any]] = {"type": "object"}

SIGNATURE_LEGEND: Final = (
    "Signatures: a tool description may end with `tool(param, ...)`; a param reads "
    "`name[*][~]:type[=default]` where * = required and ~ = not fully described (describe the tool "
    "before calling). Types: str int num bool obj any, [t] array of t, a|b either, enum[a|b] one of "
    "these values, {k*:str, n:int} an object with these members (written like params; [{...}] an "
    "array of them). A signature without ~ is enough to build a valid call; where a tool's inputSchema is "
    'only {"type":"object"}, its real schema is one describe_tool call away.'
)

DEFAULT_INSTRUCTIONS: Final = (
    "This gateway aggregates several MCP servers. Tools are named server__tool; call them by that "
    "name. describe_tool(tool_ids=[...]) returns a tool's full input schema and description "
    "(up to 5 ids; add check=true to ask whether up to 50 tools are ready to call). A call with "
    "invalid arguments is answered with the tool's real schema: fix the arguments and retry."
)


def prefixed_description(server: str, description: str) -> str:
    """``[server] description``: agents see which upstream a tool belongs to."""
    return f"[{server}] {description}" if description else f"[{server}]"


def _common(tool: Tool, published_name: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": published_name}
    if tool.title is not None:
        entry["title"] = tool.title
    return entry


def _tail(entry: dict[str, Any], tool: Tool) -> dict[str, Any]:
    if tool.annotations is not None:
        entry["annotations"] = tool.annotations
    if tool.meta is not None:
        entry["_meta"] = tool.meta
    if tool.execution is not None:
        # The gateway serves such calls as its own durable tasks (foldgate.serve.tasks).
        entry["execution"] = tool.execution
    return entry


def full_entry(tool: Tool, published_name: str) -> dict[str, Any]:
    """The full entry: the upstream schema (and outputSchema) passed through unchanged."""
    entry = _common(tool, published_name)
    entry["description"] = prefixed_description(tool.server, tool.description)
    entry["inputSchema"] = tool.input_schema
    if tool.output_schema is not None:
        entry["outputSchema"] = tool.output_schema
    return _tail(entry, tool)


def deferred_entry(tool: Tool, published_name: str, signature: Signature | None = None) -> dict[str, Any]:
    """The deferred entry: placeholder schema, the compact signature appended to the description.

    Without a signature (not compiled yet) the tool is still listed, just without the suffix.
    """
    entry = _common(tool, published_name)
    description = prefixed_description(tool.server, tool.description)
    if signature is not None:
        description += "\n" + signature.for_tool(tool.name)
    entry["description"] = description
    entry["inputSchema"] = dict(DEFERRED_SCHEMA)
    return _tail(entry, tool)


@dataclass(frozen=True, slots=True)
class EntryFragments:
    """One tool's entries as compact JSON text, rendered once at index time."""

    full: str
    deferred: str

    def pick(self, deferred: bool) -> str:
        """The fragment for the chosen form."""
        return self.deferred if deferred else self.full


def fragments_for(tool: Tool, published_name: str) -> EntryFragments:
    """Render both forms of a tool's entry."""
    return EntryFragments(
        full=compact(full_entry(tool, published_name)),
        deferred=compact(deferred_entry(tool, published_name, tool.signature)),
    )


def join_fragments(parts: Iterable[str]) -> str:
    """A JSON array of pre-rendered entries: the request path only concatenates text."""
    return "[" + ",".join(parts) + "]"


def instructions_text(operator_instructions: str | None) -> str:
    """The ``initialize`` instructions: the operator's text (else the default), then the legend."""
    head = operator_instructions.strip() if operator_instructions else DEFAULT_INSTRUCTIONS
    return f"{head}\n\n{SIGNATURE_LEGEND}"
