"""What of a tool is searchable, per field: the text the indexer analyses into BM25F fields.

A field is a separate bag of terms with its own weight and length normalisation, so a word in a
tool's name counts for more than the same word deep in a parameter description. Schemas are hostile
input (not a dict, huge, recursive): the walk is bounded in depth and in the number of nodes visited.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import IntEnum
from typing import Any

from foldgate.model.enrichment import Enrichment
from foldgate.model.tool import Tool

__all__ = ["Field", "field_texts", "param_texts"]

_MAX_DEPTH = 3
_MAX_NODES = 200
_MAX_ALTERNATIVES = 20
# Descriptions past this many characters add cost and noise, not recall (BM25 length-normalises anyway).
_MAX_CHARS = 8000


class Field(IntEnum):
    """BM25F fields; the values index per-field arrays in the config and at build time."""

    NAME = 0
    TITLE = 1
    DESCRIPTION = 2
    PARAMS = 3
    SERVER = 4
    SYNONYMS = 5
    # Index-time enrichment (foldgate.enrich): generated text, searchable but never shown as the
    # upstream's words. Empty for tools without an enrichment.
    HINT = 6
    QUERIES = 7


def _walk(schema: Any, depth: int, budget: list[int]) -> Iterator[str]:
    if not isinstance(schema, dict) or depth > _MAX_DEPTH or budget[0] <= 0:
        return
    budget[0] -= 1
    props = schema.get("properties")
    if isinstance(props, dict):
        for name, sub in props.items():
            if budget[0] <= 0:
                return
            yield str(name)
            if isinstance(sub, dict):
                for key in ("title", "description"):
                    value = sub.get(key)
                    if isinstance(value, str):
                        yield value[:_MAX_CHARS]
                yield from _walk(sub, depth + 1, budget)
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _walk(items, depth + 1, budget)
    for key in ("anyOf", "oneOf", "allOf"):
        alts = schema.get(key)
        if isinstance(alts, list):
            for alt in alts[:_MAX_ALTERNATIVES]:
                yield from _walk(alt, depth + 1, budget)


def param_texts(schema: Any) -> list[str]:
    """Parameter names, titles and descriptions of an input schema (nested ones too), bounded.

    Enum values are left out: measured neutral on the tuning sets, and long enums (country lists)
    bloat the index.
    """
    return list(_walk(schema, 0, [_MAX_NODES]))


def field_texts(tool: Tool, enrichment: Enrichment | None = None) -> dict[Field, str]:
    """The raw text of each searchable field of ``tool`` (synonyms are added later, from terms);
    ``enrichment`` fills the hint and queries fields when it was made for this version of the tool."""
    ann = tool.annotations or {}
    ann_title = ann.get("title") if isinstance(ann.get("title"), str) else None
    titles = [t for t in (tool.title, ann_title) if t]
    texts = {
        Field.NAME: tool.name,
        Field.TITLE: " ".join(titles),
        Field.DESCRIPTION: tool.description[:_MAX_CHARS],
        Field.PARAMS: " ".join(param_texts(tool.input_schema)),
        Field.SERVER: tool.server,
    }
    if enrichment is not None and enrichment.content_hash == tool.content_hash:
        texts[Field.HINT] = enrichment.hint[:_MAX_CHARS]
        texts[Field.QUERIES] = " ".join(enrichment.queries)[:_MAX_CHARS]
    return texts
