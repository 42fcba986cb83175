"""Which texts of a tool the learned scorer reads: its description and every ``description`` in its
input and output schemas (where an attack split across fields hides). Names, titles, enums and
``_meta`` are left to the rules: short labels, not prose an attack can be written in."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = ["scored_fields"]

_MAX_DEPTH: Final = 32  # schemas nest; hostile ones nest without end
_MAX_FIELDS: Final = 500  # description strings read per tool
_MAX_CHARS: Final = 20_000  # of each string (the rest of a longer one is not read)


def _schema_descriptions(node: Any, path: str, depth: int) -> Iterator[tuple[str, str]]:
    if depth > _MAX_DEPTH:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            sub = f"{path}.{key}"
            if key == "description" and isinstance(value, str):
                yield sub, value
            elif isinstance(value, dict | list):
                yield from _schema_descriptions(value, sub, depth + 1)
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _schema_descriptions(item, f"{path}[{i}]", depth + 1)


def scored_fields(entry: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """``(field path, text)`` of every description of a ``tools/list`` entry (or corpus row), non-empty
    ones only, in the order the scan reports them; never raises on odd shapes."""
    count = 0
    description = entry.get("description")
    candidates: list[Iterator[tuple[str, str]]] = []
    if isinstance(description, str):
        candidates.append(iter([("description", description)]))
    for key in ("inputSchema", "schema", "outputSchema"):
        candidates.append(_schema_descriptions(entry.get(key), key, 0))
    for source in candidates:
        for path, text in source:
            if not text.strip():
                continue
            yield path, text[:_MAX_CHARS]
            count += 1
            if count >= _MAX_FIELDS:
                return
