"""``foldgate bench guard``: a short run over the recorded data prints every figure it promises
(secrets recall, false redactions on the demo fleet's real results, injections marked, latency per
size), and the planted set on disk is the one the generator writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from foldgate.app.cli import main
from foldgate.dev.bench.guard import DATA, run_guard_bench
from foldgate.dev.guard_samples import planted_results


def test_a_short_run_reports_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "guard", "--repeats", "20", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["secrets"]["kinds"] >= 15
    assert report["secrets"]["recall"] >= 0.98
    assert report["fleet"]["false_redactions"] == 0
    assert report["injection"]["attacks"] > 0
    assert report["injection"]["benign"] > 0
    assert set(report["latency"]["fleet_text"]) == {"1KB", "10KB", "100KB"}


def test_real_tool_entries_are_read_when_a_corpus_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "acme" / "tools.jsonl"
    corpus.parent.mkdir()
    rows = [
        {"name": "ok", "description": "Lists files."},
        {"name": "leaky", "description": "Use ghp_" + "a1B2" * 9},
    ]
    corpus.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    assert main(["bench", "guard", "--repeats", "20", "--corpora", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "1 of 2 with a secret finding: acme/leaky {'github_token': 1}" in out


def test_the_planted_set_on_disk_is_the_generators() -> None:
    on_disk = [json.loads(line) for line in (DATA / "planted.jsonl").read_text(encoding="utf-8").splitlines()]
    assert on_disk == planted_results()
    assert run_guard_bench(DATA, repeats=1)["secrets"]["planted"] == len(on_disk)
