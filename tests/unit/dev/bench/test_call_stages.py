"""The breakdown's table: each stage's p50/p95 over the call records, a skipped stage counting 0, and
``other`` exactly what no stage covers (so the rows add up to the request)."""

from __future__ import annotations

from foldgate.dev.bench.call_stages import STAGES, format_breakdown, stage_table


def _record(upstream: float, guard: float | None, glue: float) -> dict[str, float]:
    record = {"foldgate.trace": 0.01, "foldgate.auth": 0.05, "foldgate.upstream": upstream}
    if guard is not None:
        record["foldgate.guard"] = guard
    record["foldgate.request"] = glue  # the request span's own time: what no stage covers
    record["total"] = sum(record.values())
    return record


def test_stage_table_reads_own_times_and_the_rest() -> None:
    records = [_record(10.0 + i, 0.1 if i % 4 == 3 else None, 0.2) for i in range(20)]
    table = stage_table(records)
    assert list(table)[: len(STAGES)] == list(STAGES.values())
    assert table["upstream wait"]["p50_ms"] == 19.5
    assert table["upstream wait"]["p95_ms"] == 29.0
    # Most calls skipped the guard: they count 0 (not left out), the few that ran it show at p95.
    assert table["result guard"] == {"p50_ms": 0.0, "p95_ms": 0.1}
    assert table["quota"] == {"p50_ms": 0.0, "p95_ms": 0.0}
    assert table["other (surfaces, glue)"]["p50_ms"] == 0.2


def test_the_report_names_every_stage() -> None:
    records = [_record(5.0, 0.1, 0.3) for _ in range(5)]
    latency = {
        "direct_p50_ms": 1.0, "direct_p95_ms": 2.0, "proxied_p50_ms": 2.0, "proxied_p95_ms": 3.0,
        "p50_overhead_ms": 1.0, "p95_overhead_ms": 1.0,
    }  # fmt: skip
    text = format_breakdown({"calls": 5, "stages": stage_table(records), "latency": latency})
    for label in STAGES.values():
        assert label in text
    assert "(+1.00)" in text
