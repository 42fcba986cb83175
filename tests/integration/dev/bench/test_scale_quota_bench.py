"""`foldgate bench scale-quota`: starts its own moto_server and serving processes, and reports the
quota's admitted requests and DynamoDB writes; pinned here on a short run so the command keeps working
(and its one quota holds across the processes: admitted within the documented bound unless it failed
open)."""

from __future__ import annotations

import json

import pytest

from foldgate.app.cli import main


def test_scale_quota_bench_reports_admitted_and_writes(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "scale-quota", "--processes", "2", "--seconds", "2", "--quota", "600", "--json"]
    assert main(args) == 0
    report = json.loads(capsys.readouterr().out)
    for phase in ("overload", "steady"):
        row = report[phase]
        assert len(row["admitted_per_process"]) == 2, phase
        assert row["other_statuses"] == {}, phase
        assert row["dynamodb_writes"] == row["dynamodb_calls"]["UpdateItem"] > 0, phase
    over = report["overload"]
    assert over["refused_429"] > 0
    assert over["admitted"] > 0
    if over["failed_open"] == 0:  # a lease slower than its timeout on a busy machine admits openly
        assert over["admitted"] <= over["bound_over_run"] + 1


def test_scale_quota_bench_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "scale-quota", "--processes", "2", "--seconds", "1", "--quota", "600"]) == 0
    out = capsys.readouterr().out
    assert "admitted / quota over the run" in out
    assert "per admitted request" in out
