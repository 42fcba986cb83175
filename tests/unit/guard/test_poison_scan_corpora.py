"""The poisoning scan against real data: recall on mcpproxy's labelled security corpus, and false
positives on every real catalog in ../shared/corpora (all benign tools), within the issue's targets:
rules alone at most 0.2%, rules and the shipped model together at most 0.1%."""

from __future__ import annotations

import json

import pytest

from foldgate.dev.corpus import load_catalog_rows
from foldgate.guard.poison_scan import scan_entry
from foldgate.guard.scorer import load_scorer
from tests.conftest import corpus_path

CATALOGS = [
    ("github-mcp-server",),
    ("livemcpbench",),
    ("mcp-flow",),
    ("mcp-proxy-snapshots",),
    ("mcptoolbench-pp",),
    ("mcpproxy", "corpus_v2.tools.json"),
    ("mcpproxy", "livemcptool_snapshot", "tools.json"),
]


@pytest.mark.corpus
def test_recall_on_the_labelled_security_corpus_is_at_least_95_percent() -> None:
    doc = json.loads(corpus_path("mcpproxy", "security_corpus_v1.json").read_text(encoding="utf-8"))
    malicious = [e for e in doc["entries"] if e["label"] == "malicious"]
    assert len(malicious) >= 20
    missed = [e["id"] for e in malicious if not scan_entry({"name": "t", "description": e["description"]})]
    assert len(missed) / len(malicious) <= 0.05, missed


@pytest.mark.corpus
@pytest.mark.parametrize("parts", CATALOGS, ids=lambda p: "/".join(p))
def test_false_positives_on_a_real_catalog_are_at_most_0_2_percent(parts: tuple[str, ...]) -> None:
    rows = load_catalog_rows(corpus_path(*parts))
    flagged = [f"{r['server']}:{r.get('name', r.get('tool'))}" for r in rows if scan_entry(r)]
    assert len(flagged) <= 0.002 * len(rows), flagged


@pytest.mark.corpus
@pytest.mark.parametrize("parts", CATALOGS, ids=lambda p: "/".join(p))
def test_with_the_model_false_positives_on_a_real_catalog_are_at_most_0_1_percent(
    parts: tuple[str, ...],
) -> None:
    scorer = load_scorer()
    assert scorer is not None
    rows = load_catalog_rows(corpus_path(*parts))
    flagged = [f"{r['server']}:{r.get('name', r.get('tool'))}" for r in rows if scan_entry(r, scorer)]
    assert len(flagged) <= 0.001 * len(rows), flagged


@pytest.mark.corpus
@pytest.mark.parametrize("parts", CATALOGS, ids=lambda p: "/".join(p))
def test_with_the_semantic_scorer_false_positives_stay_at_most_0_1_percent(parts: tuple[str, ...]) -> None:
    # The cue head (what a scan without the local encoder runs) reads every prose field: parameter
    # descriptions, defaults and enums of real tools must not be held for it.
    from foldgate.guard.scorer import load_semantic

    scorer, semantic = load_scorer(), load_semantic()
    assert semantic is not None
    rows = load_catalog_rows(corpus_path(*parts))
    flagged = [
        f"{r['server']}:{r.get('name', r.get('tool'))}" for r in rows if scan_entry(r, scorer, semantic)
    ]
    assert len(flagged) <= 0.001 * len(rows), flagged
