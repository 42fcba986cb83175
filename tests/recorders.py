"""An in-memory activity recorder for tests: every event it is handed, in order."""

from __future__ import annotations

import json

from foldgate.model.activity import ActivityEvent, ActivityRecord, AuditEvent

__all__ = ["ListRecorder"]


class ListRecorder:
    """Keeps what it records; ``calls`` and ``audits`` split the two kinds."""

    def __init__(self) -> None:
        self.events: list[ActivityRecord] = []

    def record(self, event: ActivityRecord) -> None:
        """Keep the event."""
        self.events.append(event)

    @property
    def calls(self) -> list[ActivityEvent]:
        """The call events, in the order they were recorded."""
        return [e for e in self.events if isinstance(e, ActivityEvent)]

    @property
    def audits(self) -> list[AuditEvent]:
        """The operator events, in the order they were recorded."""
        return [e for e in self.events if isinstance(e, AuditEvent)]

    def only_call(self) -> ActivityEvent:
        """The one call event there must be."""
        calls = self.calls
        assert len(calls) == 1, calls
        return calls[0]

    def text(self) -> str:
        """Every event as JSON text (to look for what must never be in one)."""
        return "\n".join(json.dumps(e.to_doc(), default=str) for e in self.events)

    def clear(self) -> None:
        """Forget what was recorded."""
        self.events.clear()
