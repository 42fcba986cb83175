"""tools/tuning_sets.py: the generated tuning sets are reproducible, hold no corpus text, read naturally."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import corpus_path
from tests.tuning import REFS, tuning_sets_module

ts = tuning_sets_module()


@pytest.mark.parametrize(
    ("template", "parts", "text"),
    [
        (
            "{0}, and then {1}",
            ["Read the file a.txt.", "Search the web."],
            "Read the file a.txt, and then search the web.",
        ),
        (
            "{0}. After that, {1}",
            ["Read the file.", "Search the web."],
            "Read the file. After that, search the web.",
        ),
        (
            "{0}, and then {1}",
            ["What is the price of X?", "Search news."],
            "What is the price of X? And then search news.",
        ),
        ("{0}; {1}; and {2}", ["Open a.", "Close b.", "SQL query c."], "Open a; close b; and SQL query c."),
    ],
)
def test_render_joins_clauses_naturally(template: str, parts: list[str], text: str) -> None:
    assert ts.render(template, parts) == text


def test_committed_references_regenerate_byte_for_byte(tmp_path: Path) -> None:
    corpora = corpus_path("mcptoolbench-pp").parent
    assert ts.main(["generate", "--corpora", str(corpora), "--out", str(tmp_path)]) == 0
    for name in ("multi_intent.jsonl", "cross_catalog.jsonl"):
        assert (tmp_path / name).read_bytes() == (REFS / name).read_bytes(), name


def test_references_hold_ids_and_labels_but_no_query_text() -> None:
    for name in ("multi_intent.jsonl", "cross_catalog.jsonl"):
        rows = [json.loads(line) for line in (REFS / name).read_text().splitlines()]
        assert rows
        for row in rows:
            assert "query" not in row
            assert set(row) <= {"id", "parts", "template", "expected"}
            assert len(row["parts"]) == len(row["expected"])
    multi = [json.loads(line) for line in (REFS / "multi_intent.jsonl").read_text().splitlines()]
    # Every multi-intent task needs 2 or 3 different tools.
    assert all(len(set(r["expected"])) == len(r["expected"]) in (2, 3) for r in multi)


def test_materialise_resolves_references_against_the_source_queries() -> None:
    source = [
        {"id": "a", "query": "Read the file x.", "expected": ["fs__read"]},
        {"id": "b", "query": "Search the web.", "expected": ["web__search"]},
    ]
    refs = [
        {
            "id": "m",
            "parts": ["a", "b"],
            "template": "First {0}, then {1}",
            "expected": ["fs__read", "web__search"],
        }
    ]
    assert ts.materialise(refs, source) == [
        {
            "id": "m",
            "query": "First read the file x, then search the web.",
            "expected": ["fs__read", "web__search"],
        }
    ]


def test_without_clones_drops_exact_copies_only() -> None:
    labelled = [{"name": "read_file", "description": "Read a file from disk."}]
    haystack = [
        {"name": "read_file", "description": "Read a file  from disk."},  # same text, other spacing
        {"name": "read_file", "description": "Read the complete contents of a file."},
        {"name": "read_text", "description": "Read a file from disk."},
    ]
    kept, dropped = ts.without_clones(haystack, labelled)
    assert dropped == 1
    assert kept == haystack[1:]
