"""Published tool names: ``server__tool``, valid for MCP clients, unique, resolved through a map.

MCP clients commonly accept tool names of ``[A-Za-z0-9_-]`` up to 64 characters. Upstream tool names
can be anything, so a name that would break that is rewritten deterministically (invalid runs become
``_``, long names are cut and given a short hash) and collisions get a hash suffix. The gateway never
splits a published name: it looks it up in the registration map the indexer built.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_NAME", "PublishedName", "assign_names", "display_name", "is_valid_name"]

MAX_NAME: Final = 64
SEP: Final = "__"
_VALID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_INVALID_RUN = re.compile(r"[^A-Za-z0-9_-]+")


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


def assign_names(tools: Iterable[tuple[str, str]]) -> list[PublishedName]:
    """Published names for (server, tool) pairs, in input order; deterministic and collision-free.

    Duplicate (server, tool) pairs keep only their first occurrence: an upstream listing the same
    name twice cannot be called unambiguously.
    """
    out: list[PublishedName] = []
    taken: set[str] = set()
    seen: set[tuple[str, str]] = set()
    for server, tool in tools:
        if (server, tool) in seen:
            continue
        seen.add((server, tool))
        name, reason = _fit(server, tool)
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
