"""`foldgate bench call`: real server-everything, replay and `foldgate serve` processes; pinned here on a
tiny run so the command keeps working and its counted figures (not its timings) hold."""

from __future__ import annotations

import json

import pytest

from foldgate.app.cli import main
from tests.procs import need_demo_fleet


def test_call_bench_counts_one_upstream_request_per_warm_proxied_call(
    capsys: pytest.CaptureFixture[str],
) -> None:
    need_demo_fleet()
    args = ["--calls", "10", "--callers", "4", "--per-caller", "3", "--cold-rounds", "1", "--json"]
    assert main(["bench", "call", *args]) == 0
    report = json.loads(capsys.readouterr().out)
    for upstream in ("everything", "replay"):
        trips = report["round_trips"][upstream]
        assert trips == {"upstream_requests_per_call": 1.0, "handshakes": 0, "new_connections": 0}, upstream
    assert set(report["latency"]) == {"everything_echo", "replay_find_contact"}
    for row in report["latency"].values():
        assert row["direct_p50_ms"] > 0
        assert row["proxied_p50_ms"] > 0
    recording = report["recording"]  # the activity log on vs off, the same call in the same run
    assert recording["on_p50_ms"] > 0
    assert recording["off_p50_ms"] > 0
    concurrency = report["concurrency"]
    assert concurrency["direct"]["errors"] == 0
    assert concurrency["proxied"]["errors"] == 0
    assert concurrency["ratio"] > 0
    assert report["cold"]["first_call_ms"] > 0
    assert report["cold"]["naive_first_call_ms"] > 0


def test_call_bench_text_report(capsys: pytest.CaptureFixture[str]) -> None:
    need_demo_fleet()
    args = ["--calls", "10", "--callers", "2", "--per-caller", "2", "--cold-rounds", "0"]
    assert main(["bench", "call", *args]) == 0
    out = capsys.readouterr().out
    assert "warm everything: 1.0 upstream HTTP requests per call, 0 handshakes" in out
    assert "concurrent callers: proxied" in out
    assert "activity log on vs off" in out
    assert "cold" not in out  # --cold-rounds 0 skips the fresh processes
