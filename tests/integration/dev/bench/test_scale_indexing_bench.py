"""`foldgate bench scale-indexing` on a tiny run (the demo catalog, a dozen tenants): the command keeps
working end to end (schedule function -> SQS -> IndexerFunction batches on moto_server) and its counted
figures and arithmetic hold, not its timings."""

from __future__ import annotations

import json
import math

import pytest

from foldgate.app.cli import main
from tests.procs import REPO


def test_a_short_run_enqueues_indexes_and_projects(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["--corpus", str(REPO / "demo" / "catalog.jsonl"), "--tenants", "12", "--sample", "4"]
    args += ["--batch", "4", "--replays", "1", "--embedding", "none", "--concurrency", "25", "--json"]
    assert main(["bench", "scale-indexing", *args]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["tenants"] == 12
    assert report["send_calls"] == 2  # 12 messages, 10 per SendMessageBatch
    assert report["batch_item_failures"] == 0
    assert report["invocations_measured"] >= 1
    for key in ("projection_measured", "projection_lambda"):
        projection = report[key]
        assert projection["invocations"] == 2500
        assert projection["waves"] == math.ceil(2500 / 25)


def test_without_the_corpus_the_bench_skips(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "scale-indexing", "--corpus", "/nonexistent/tools.jsonl"]) == 0
    assert capsys.readouterr().out.startswith("skipped: ")
