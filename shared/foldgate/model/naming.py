"""Published tool names: ``server__tool``, valid for MCP clients, unique, resolved through a map.

A server published ``bare`` keeps its tools' (and prompts') upstream names when nothing else claims
them: a bare name is kept only if it is a valid name, is none of the gateway's own meta-tools
(:data:`RESERVED_NAMES`), no other bare server lists it and no prefixed name equals it. Otherwise the
tool falls back to ``server__tool`` and its ``renamed`` reason names what it collided with.

MCP clients commonly accept tool names of ``[A-Za-z0-9_-]`` up to 64 characters. Upstream tool names
can be anything, so a name that would break that is rewritten deterministically (invalid runs become
``_``, long names are cut and given a short hash) and collisions get a hash suffix. The gateway never
splits a published name: it looks it up in the registration map the indexer built.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import Final

__all__ = [
    "MAX_NAME",
    "MAX_SERVER_NAME",
    "RESERVED_NAMES",
    "SERVER_NAME_RE",
    "PublishedName",
    "assign_names",
    "display_name",
    "is_valid_name",
]

MAX_NAME: Final = 64
SEP: Final = "__"
# Published tool names are `server__tool`; clients commonly cap names at 64 characters of
# [A-Za-z0-9_-], so a server name keeps to that alphabet and leaves room for the tool part.
SERVER_NAME_RE = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9-]|_(?!_))*$")
MAX_SERVER_NAME = 24
_VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INVALID_RUN = re.compile(r"[^A-Za-z0-9_-]+")
# The gateway's own meta-tools on any surface: a bare upstream tool of one of these names would shadow
# it (or be shadowed) on the surfaces that list both, so it is never published bare.
RESERVED_NAMES: Final = frozenset(
    {
        "retrieve_tools",
        "describe_tool",
        "call_tool",
        "call_tool_read",
        "call_tool_write",
        "call_tool_destructive",
        "read_cache",
        "task_result",
        "code_execution",
    }
)


def is_valid_name(name: str) -> bool:
    """Whether a published name satisfies the common client rules."""
    return bool(_VALID.match(name))


@dataclass(frozen=True, slots=True)
class PublishedName:
    """The published name of one upstream tool, and why it differs from ``server__tool`` if it does."""

    server: str
    tool: str
    published: str
    renamed: str | None = None  # a human-readable reason when the name was rewritten


def _short_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:6]


def _fit(server: str, tool: str) -> tuple[str, str | None]:
    natural = f"{server}{SEP}{tool}"
    if is_valid_name(natural):
        return natural, None
    cleaned = _INVALID_RUN.sub("_", tool).strip("_") or "tool"
    reason = "characters outside [A-Za-z0-9_-]" if cleaned != tool else None
    candidate = f"{server}{SEP}{cleaned}"
    if len(candidate) > MAX_NAME:
        suffix = "_" + _short_hash(tool)
        candidate = candidate[: MAX_NAME - len(suffix)].rstrip("_") + suffix
        reason = f"longer than {MAX_NAME} characters" if reason is None else reason + ", too long"
    return candidate, reason


def _bare_names(tools: list[tuple[str, str]], bare: frozenset[str]) -> dict[tuple[str, str], str]:
    """The bare servers' tools that keep their own name: (server, tool) -> why not, or "" when kept."""
    prefixed = {_fit(server, tool)[0]: (server, tool) for server, tool in tools if server not in bare}
    claims: dict[str, list[str]] = {}
    for server, tool in tools:
        if server in bare and server not in claims.get(tool, []):
            claims.setdefault(tool, []).append(server)
    out: dict[tuple[str, str], str] = {}
    for server, tool in tools:
        if server not in bare or (server, tool) in out:
            continue
        others = [s for s in claims[tool] if s != server]
        if not is_valid_name(tool):
            out[(server, tool)] = "not a valid bare name"
        elif tool in RESERVED_NAMES:
            out[(server, tool)] = f"{tool} is one of foldgate's own tools"
        elif others:
            out[(server, tool)] = f"{tool} is also a tool of bare server {others[0]}"
        elif tool in prefixed:
            out[(server, tool)] = f"{tool} is also the published name of {':'.join(prefixed[tool])}"
        else:
            out[(server, tool)] = ""
    return out


def assign_names(tools: Iterable[tuple[str, str]], *, bare: Collection[str] = ()) -> list[PublishedName]:
    """Published names for (server, tool) pairs, in input order; deterministic and collision-free.

    Duplicate (server, tool) pairs keep only their first occurrence: an upstream listing the same
    name twice cannot be called unambiguously. A tool of a server in ``bare`` keeps its own name
    unless that collides (see the module docstring); a collision publishes it prefixed, with a
    ``renamed`` reason beginning ``bare name refused:``.
    """
    pairs = list(tools)
    kept = _bare_names(pairs, frozenset(bare)) if bare else {}
    out: list[PublishedName] = []
    # Bare names are claimed first so that a prefixed name's hash suffix can never land on one.
    taken: set[str] = {pair[1] for pair, why in kept.items() if not why}
    seen: set[tuple[str, str]] = set()
    for server, tool in pairs:
        if (server, tool) in seen:
            continue
        seen.add((server, tool))
        why = kept.get((server, tool))
        if why == "":
            out.append(PublishedName(server, tool, tool))
            continue
        name, reason = _fit(server, tool)
        if why:
            reason = f"bare name refused: {why}" + (f", {reason}" if reason else "")
        if name in taken:
            suffix = "_" + _short_hash(f"{server}\0{tool}")
            name = name[: MAX_NAME - len(suffix)] + suffix
            reason = (reason + ", " if reason else "") + "collides with another published name"
        taken.add(name)
        out.append(PublishedName(server, tool, name, reason))
    return out


def display_name(key: str) -> str:
    """The ``server__tool`` name of a canonical key ``server:tool`` for people (the console): what the
    tool is, or would be, published as without a collision. Server names never contain ``:`` (their
    config pattern), so the first ``:`` ends the server; anything else is returned as it is."""
    server, sep, tool = key.partition(":")
    if not sep or not server:
        return key
    return assign_names([(server, tool)])[0].published
