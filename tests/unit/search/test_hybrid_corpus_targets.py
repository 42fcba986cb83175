"""The hybrid search targets on the real tuning sets (../shared/corpora) with the real local model."""

from __future__ import annotations

import pytest

from foldgate.dev.bench.search import run_search_bench
from tests.conftest import corpus_path
from tests.unit.search.fakes import local_model

pytestmark = pytest.mark.corpus


def test_mcpproxy_golden_set_hybrid() -> None:
    model = local_model()
    report = run_search_bench(
        corpus_path("mcpproxy", "corpus_v2.tools.json"),
        corpus_path("mcpproxy", "retrieval_golden_v1.json"),
        engine="hybrid",
        provider=model,
    )
    assert report["queries"] == 47
    # Lexical alone: R@5 0.808, nDCG@10 0.728.
    assert report["recall@5"] >= 0.90
    assert report["ndcg@10"] >= 0.85


def test_mcptoolbench_pp_hybrid_recall_at_5() -> None:
    model = local_model()
    report = run_search_bench(
        corpus_path("mcptoolbench-pp", "tools.jsonl"),
        corpus_path("mcptoolbench-pp", "queries.jsonl"),
        engine="hybrid",
        provider=model,
    )
    assert report["queries"] == 703
    assert report["recall@5"] >= 0.96  # lexical alone: 0.950, dense alone: 0.879
