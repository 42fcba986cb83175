"""The fan-out recorder: every recorder gets every event, and one that raises costs the others nothing
(and the caller nothing): logged once, counted after that."""

from __future__ import annotations

import logging

import pytest

from foldgate.model.activity import ActivityEvent, ActivityRecord, Actor, AuditEvent
from foldgate.telemetry.recorders import Recorders


class Keeps:
    def __init__(self) -> None:
        self.events: list[ActivityRecord] = []

    def record(self, event: ActivityRecord) -> None:
        self.events.append(event)


class Breaks:
    def record(self, event: ActivityRecord) -> None:
        raise RuntimeError("store down")


def _event(tool: str = "echo") -> ActivityEvent:
    return ActivityEvent(tenant="acme", method="tools/call", surface="mcp", outcome="ok", tool=tool)


def test_every_recorder_gets_every_event_in_order() -> None:
    first, second = Keeps(), Keeps()
    fan = Recorders(first, second)
    call, audit = _event(), AuditEvent(tenant="acme", action="token.create", actor=Actor("cli"))
    fan.record(call)
    fan.record(audit)
    assert first.events == second.events == [call, audit]


def test_a_failing_recorder_never_stops_the_others_or_the_caller(caplog: pytest.LogCaptureFixture) -> None:
    before, after = Keeps(), Keeps()
    fan = Recorders(before, Breaks(), after)
    with caplog.at_level(logging.WARNING, logger="foldgate.telemetry.recorders"):
        for n in range(3):
            fan.record(_event(f"t{n}"))  # does not raise
    assert [e.tool for e in after.events] == ["t0", "t1", "t2"]  # type: ignore[union-attr]
    assert len(before.events) == 3
    assert fan.failures == [0, 3, 0]
    assert len([r for r in caplog.records if "Breaks" in r.getMessage()]) == 1


def test_no_recorders_is_fine() -> None:
    Recorders().record(_event())
