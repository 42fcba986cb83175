"""to_doc → JSON → zlib → from_doc gives the same index: same hits, same scores."""

from __future__ import annotations

import json
import zlib

import pytest

from foldgate.model.tool import Tool
from foldgate.search import IndexFormatError, SearchIndex, build_search_index

QUERIES = ["create_issue", "open a new issue", "read a file from disk", "list_", "slack channel", "", "zzz"]


def _round_trip(index: SearchIndex) -> SearchIndex:
    blob = zlib.compress(json.dumps(index.to_doc()).encode())
    return SearchIndex.from_doc(json.loads(zlib.decompress(blob)))


def test_round_trip_gives_identical_results(tiny_catalog: list[Tool]) -> None:
    index = build_search_index(tiny_catalog)
    loaded = _round_trip(index)
    assert list(loaded.keys) == list(index.keys)
    assert loaded.config == index.config
    for query in QUERIES:
        assert loaded.search(query, limit=20) == index.search(query, limit=20)
        assert loaded.scores(query) == index.scores(query)


def test_doc_is_compact_json(tiny_catalog: list[Tool]) -> None:
    doc = build_search_index(tiny_catalog).to_doc()
    text = json.dumps(doc)
    assert json.loads(text) == doc
    # Descriptions are not stored: only names, servers, terms and packed integers.
    assert "complete contents" not in text
    assert set(doc) >= {"v", "config", "servers", "names", "terms", "offsets", "gaps", "sats"}


def test_empty_catalog_round_trips_and_finds_nothing() -> None:
    index = _round_trip(build_search_index([]))
    assert len(index) == 0
    assert index.search("anything") == []
    assert index.scores("anything") == {}


def test_unicode_names_and_servers_round_trip() -> None:
    tools = [
        Tool("长亭", "IP 情报查询", "查询 IP 地址的威胁情报"),
        Tool("café", "crème_brûlée", "Dessert recipes."),
    ]
    index = build_search_index(tools)
    loaded = _round_trip(index)
    assert loaded.search("情报")[0].key == "长亭:IP 情报查询"
    assert loaded.search("crème brûlée")[0].key == "café:crème_brûlée"


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: d.update(v=99),
        lambda d: d.pop("gaps"),
        lambda d: d.update(gaps="not base64!!"),
        lambda d: d.update(sats=""),
        lambda d: d.update(offsets="AAAA"),
        lambda d: d.update(doc_server_w="X"),
        lambda d: d.update(names=[]),
        lambda d: d.update(config="nope"),
    ],
)
def test_malformed_docs_raise_index_format_error(tiny_catalog: list[Tool], mutate: object) -> None:
    doc = build_search_index(tiny_catalog).to_doc()
    mutate(doc)  # type: ignore[operator]
    with pytest.raises(IndexFormatError):
        SearchIndex.from_doc(doc)


def test_non_mapping_doc_raises() -> None:
    with pytest.raises(IndexFormatError):
        SearchIndex.from_doc([])  # type: ignore[arg-type]
