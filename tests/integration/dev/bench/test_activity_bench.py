"""``foldgate bench activity`` runs end to end on a tiny load: every event recorded is written (SQLite
and DynamoDB on its own moto_server), in fewer batched writes than calls, and the report prints."""

from __future__ import annotations

from foldgate.dev.bench.activity import format_activity_report, run_activity_bench


def test_a_tiny_run_writes_every_event_in_batches_and_prints() -> None:
    report = run_activity_bench(records=2000, rate=500.0, seconds=0.2)
    assert report["enqueue"]["dropped"] == 0
    for backend in ("sqlite", "dynamodb"):
        row = report[backend]
        assert (row["calls"], row["written"], row["dropped"]) == (100, 100, 0)
        assert row["writes_during_load"] <= 4  # 100 calls: at most 4 full batches before close
    assert "per call" in format_activity_report(report)
