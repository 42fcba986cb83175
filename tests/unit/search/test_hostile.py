"""Hostile queries and hostile tools never raise: best effort or []."""

from __future__ import annotations

import random

import pytest

from foldgate.model.tool import Tool
from foldgate.search import build_search_index

HOSTILE = [
    "",
    "   \t\n ",
    "!!!???...---___",
    "\x00\x01\x02",
    "🙂🙃 🔥",
    "مرحبا بالعالم",
    "'; DROP TABLE tools; --",
    "a " * 5000,
    "file " * 3000,
    "x" * 10_000,
    "".join(chr(random.Random(7).randint(32, 0x2FFFF)) for _ in range(10_000)),
    "\ud800 lone surrogate",
]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_never_raise(tiny_catalog: list[Tool], query: str) -> None:
    index = build_search_index(tiny_catalog)
    hits = index.search(query, limit=10)
    assert len(hits) <= 10
    assert index.rank(index.scores(query), limit=10) == hits


def test_punctuation_only_query_returns_nothing(tiny_catalog: list[Tool]) -> None:
    assert build_search_index(tiny_catalog).search("?!.,;:") == []


def test_non_string_query_returns_nothing(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    assert index.search(None) == []  # type: ignore[arg-type]
    assert index.scores(123) == {}  # type: ignore[arg-type]


def test_hostile_tools_are_indexed() -> None:
    loop: dict[str, object] = {"type": "object"}
    loop["properties"] = {"self": loop}  # recursive schema
    tools = [
        Tool("s", "", ""),
        Tool("s", "recursive", "has a recursive schema", input_schema=loop),
        Tool("s", "not_a_dict", "schema is a string", input_schema="{nope"),
        Tool("s", "huge", "word " * 100_000, input_schema={"properties": {f"p{i}": {} for i in range(5000)}}),
        Tool("s", "🙂", "emoji name", annotations={"title": 5}),
    ]
    index = build_search_index(tools)
    assert index.search("recursive schema")[0].key == "s:recursive"
    assert index.search("emoji")[0].key == "s:🙂"
