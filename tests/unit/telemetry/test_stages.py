"""The stage timer behind ``bench call --breakdown``: one record per request, each stage's own time
(nested stages subtracted), the request's trace still told to upstreams, records written on flush."""

from __future__ import annotations

from pathlib import Path

import pytest

from foldgate.telemetry import tracing
from foldgate.telemetry.stages import StageTimer, read_stage_log
from foldgate.telemetry.traceparent import TraceParent


class _Clock:
    """perf_counter for the timer: moves only when the test says (no sleep, no load dependence)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_each_request_is_one_record_of_own_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = _Clock()
    monkeypatch.setattr("foldgate.telemetry.stages.time.perf_counter", clock)
    time = clock
    timer = StageTimer(tmp_path / "stages.json")
    previous = tracing.install(timer)
    try:
        incoming = TraceParent.new()
        with tracing.request_trace(incoming, surface="direct"):
            with tracing.span("foldgate.auth"):
                time.sleep(0.002)
                with tracing.span("foldgate.quota"):
                    time.sleep(0.02)
            with tracing.span("foldgate.activity"):
                time.sleep(0.001)
            with tracing.span("foldgate.activity"):
                time.sleep(0.001)
            header = tracing.outgoing_traceparent()
        with tracing.request_trace(None):
            pass
    finally:
        tracing.install(previous)
    assert header is not None
    assert incoming.trace_id in header
    timer.flush()
    first, second = read_stage_log(tmp_path / "stages.json")
    # The quota's 20 ms is the quota's, not authentication's.
    assert first["foldgate.quota"] == pytest.approx(20)
    assert first["foldgate.auth"] == pytest.approx(2)
    # A stage entered twice in one request is summed into one figure.
    assert first["foldgate.activity"] == pytest.approx(2)
    assert first["total"] == pytest.approx(24)
    assert set(second) == {"foldgate.trace", "foldgate.request", "total"}


def test_nothing_is_timed_without_the_timer() -> None:
    assert not tracing.tracing_on()
    assert tracing.span("foldgate.guard") is tracing.NULL_SPAN


def test_an_absent_log_reads_empty(tmp_path: Path) -> None:
    assert read_stage_log(tmp_path / "none.json") == []
