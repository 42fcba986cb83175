"""The tool catalog model: one upstream tool as listed, plus the facts derived from it once."""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from foldgate.model.jsonutil import canonical, compact, sha256_hex
from foldgate.model.signature import Signature, compile_signature

__all__ = ["Tool", "tool_from_wire"]

# A rough chars-per-token ratio for JSON-heavy text; exact counts come from foldgate.model.token_count.
_CHARS_PER_TOKEN = 3.6


@dataclass(frozen=True, slots=False)
class Tool:
    """One upstream tool exactly as its server declared it.

    ``input_schema`` is kept as received (it may be hostile: not a dict, huge, recursive); every
    consumer copes. ``annotations`` and ``meta`` are None when the upstream did not send them, so
    nothing is ever invented on the way out.
    """

    server: str
    name: str
    description: str = ""
    input_schema: Any = field(default_factory=lambda: {"type": "object"})
    title: str | None = None
    output_schema: Any = None
    annotations: dict[str, Any] | None = None
    meta: dict[str, Any] | None = None
    # 2025-11-25 ``execution``: only a valid ``taskSupport`` is kept (see tool_from_wire). Not part of
    # the content hash: how a call may run is no change to what the tool does (approvals stand).
    execution: dict[str, Any] | None = None

    @property
    def key(self) -> str:
        """Canonical id ``server:tool`` (never split: either part may contain anything)."""
        return f"{self.server}:{self.name}"

    @cached_property
    def content_hash(self) -> str:
        """Stable hash of everything an agent relies on; it changes exactly when the tool changes.

        ``_meta`` is published with the tool, so it is hashed too (only when present, so that tools
        without it keep the hashes operators already approved)."""
        content: dict[str, Any] = {
            "server": self.server,
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": self.annotations,
        }
        if self.meta is not None:
            content["_meta"] = self.meta
        return sha256_hex(canonical(content))

    @cached_property
    def schema_json(self) -> str:
        """The input schema as compact wire JSON."""
        return compact(self.input_schema)

    @property
    def schema_chars(self) -> int:
        """Size of the input schema in characters of compact JSON (the deferral size rule's measure)."""
        return len(self.schema_json)

    @property
    def token_estimate(self) -> int:
        """A cheap estimate of the tokens the schema costs (exact counts: foldgate.model.token_count)."""
        return round(self.schema_chars / _CHARS_PER_TOKEN)

    @cached_property
    def signature(self) -> Signature:
        """The compact signature of the input schema (compiled once per tool)."""
        return compile_signature(self.input_schema)

    def to_wire(self) -> dict[str, Any]:
        """The tool as an MCP ``tools/list`` entry in the upstream's own terms (camelCase keys)."""
        out: dict[str, Any] = {"name": self.name}
        if self.title is not None:
            out["title"] = self.title
        out["description"] = self.description
        out["inputSchema"] = self.input_schema
        if self.output_schema is not None:
            out["outputSchema"] = self.output_schema
        if self.annotations is not None:
            out["annotations"] = self.annotations
        if self.meta is not None:
            out["_meta"] = self.meta
        if self.execution is not None:
            out["execution"] = self.execution
        return out

    @property
    def declares_tasks(self) -> bool:
        """Whether the upstream declared the tool may (or must) run as a task (2025-11-25)."""
        return self.execution is not None and self.execution.get("taskSupport") in ("optional", "required")


def _opt_dict(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


def tool_from_wire(server: str, entry: dict[str, Any]) -> Tool:
    """Build a Tool from a ``tools/list`` entry (or a corpus row); tolerant of missing fields.

    A schema given as JSON text is parsed; one that does not parse is kept as text so the
    signature compiler reports it lossy instead of the loader failing.
    """
    schema = entry.get("inputSchema", entry.get("input_schema", entry.get("schema", {"type": "object"})))
    if isinstance(schema, str):
        with contextlib.suppress(ValueError):
            schema = json.loads(schema)
    description = entry.get("description")
    title = entry.get("title")
    return Tool(
        server=server,
        name=str(entry.get("name", entry.get("tool", ""))),
        description=description if isinstance(description, str) else "",
        input_schema=schema,
        title=title if isinstance(title, str) else None,
        output_schema=entry.get("outputSchema", entry.get("output_schema")),
        annotations=_opt_dict(entry.get("annotations")),
        meta=_opt_dict(entry.get("_meta")),
        execution=_execution(entry.get("execution")),
    )


def _execution(value: Any) -> dict[str, Any] | None:
    """A listing's ``execution`` reduced to what foldgate acts on: a known ``taskSupport`` value (the
    rest of a hostile object is dropped, never passed on)."""
    support = value.get("taskSupport") if isinstance(value, dict) else None
    return {"taskSupport": support} if support in ("forbidden", "optional", "required") else None
