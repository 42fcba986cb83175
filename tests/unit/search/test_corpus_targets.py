"""The search targets on the real tuning sets (../shared/corpora): no model call, lexical only."""

from __future__ import annotations

import pytest

from foldgate.dev.bench.search import run_search_bench
from tests.conftest import corpus_path

pytestmark = pytest.mark.corpus


def test_mcpproxy_golden_set_beats_plain_bm25_and_mcpproxy() -> None:
    report = run_search_bench(
        corpus_path("mcpproxy", "corpus_v2.tools.json"), corpus_path("mcpproxy", "retrieval_golden_v1.json")
    )
    assert report["queries"] == 47
    # Published: mcpproxy's own index R@5 0.681 / nDCG@10 0.609, plain BM25 R@5 0.748 / nDCG@10 0.684.
    assert report["recall@5"] >= 0.76
    assert report["ndcg@10"] >= 0.70


def test_mcptoolbench_pp_recall_at_5() -> None:
    report = run_search_bench(
        corpus_path("mcptoolbench-pp", "tools.jsonl"), corpus_path("mcptoolbench-pp", "queries.jsonl")
    )
    assert report["queries"] == 703
    assert report["recall@5"] >= 0.94  # plain BM25: 0.937
