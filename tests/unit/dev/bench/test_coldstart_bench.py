"""``bench coldstart``: a bare interpreter and a handler timed in fresh processes, the handler's init
above the bare floor with more modules, and the table naming every variant."""

from __future__ import annotations

from foldgate.dev.bench.coldstart import format_coldstart_report, run_coldstart_bench


def test_one_round_times_the_bare_floor_and_the_handler() -> None:
    report = run_coldstart_bench(rounds=1, handlers=("code",))
    rows = report["handlers"]
    assert set(rows) == {"bare", "code"}
    assert rows["bare"]["init_ms"] == 0.0
    assert rows["code"]["init_ms"] > 0
    assert rows["code"]["modules"] > rows["bare"]["modules"]
    assert rows["code"]["over_bare_ms"] > 0
    text = format_coldstart_report(report)
    assert "bare" in text
    assert "code" in text
