"""``foldgate bench code`` measures a real worker and prints figures."""

from __future__ import annotations

import json

import pytest

from foldgate.app.cli import main
from foldgate.dev.bench.code import format_code_report, run_code_bench


def test_the_bench_reports_every_figure() -> None:
    report = run_code_bench(runs=3)
    for key in ("trivial_run", "one_call_run", "twenty_calls_sequential_run", "twenty_calls_parallel_run"):
        assert 0 < report[key]["p50_ms"] <= report[key]["p95_ms"]
    # Per-call costs are differences of two timed runs: on a noisy machine the parallel one can dip
    # below zero, so only their order is pinned.
    for key in ("per_call_sequential", "per_call_parallel"):
        assert report[key]["p50_ms"] <= report[key]["p95_ms"]
    assert report["respawn"]["respawns"] == report["respawn"]["kills"] == 3
    assert report["respawn"]["worker_start_p50_ms"] > 0
    text = format_code_report(report)
    assert "run `return 1`" in text
    assert "respawn after a timeout kill" in text


def test_the_cli_prints_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "code", "--runs", "2", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["runs"] == 2
