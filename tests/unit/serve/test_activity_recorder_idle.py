"""The buffered recorder after a quiet spell: an event recorded once the writer has gone idle (its
buffer written, nothing to wait for) is still written within ``max_age_s``, with no flush and no
further event (it sat in the buffer until another event arrived: the console's live Activity page
never showed an agent's call made after the operator's sign-in)."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from foldgate.model.activity import ActivityEvent
from foldgate.serve.activity_recorder import BufferedRecorder
from foldgate.store.activity.base import ActivityPage, ActivityQuery, ActivityStore, StoredRecord

WAIT = 10.0  # seconds: an upper bound for what happens in milliseconds, never a sleep


class Written(ActivityStore):
    """Keeps what is written in memory and lets a test wait for a count."""

    def __init__(self) -> None:
        self.records: list[StoredRecord] = []
        self.changed = threading.Condition()

    def put_many(self, records: Sequence[StoredRecord]) -> None:
        with self.changed:
            self.records.extend(records)
            self.changed.notify_all()

    def query(self, query: ActivityQuery) -> ActivityPage:
        raise NotImplementedError

    def wait_for(self, count: int) -> bool:
        with self.changed:
            return self.changed.wait_for(lambda: len(self.records) >= count, WAIT)


def event(tool: str) -> ActivityEvent:
    return ActivityEvent("acme", "tools/call", "mcp", "ok", at=1_800_000_000.0, tool=tool)


def test_an_event_recorded_after_the_writer_went_idle_is_written_by_its_age_alone() -> None:
    store = Written()
    recorder = BufferedRecorder(store, max_age_s=0.05)
    try:
        recorder.record(event("first"))
        assert store.wait_for(1)
        # Written and flushed: the writer has nothing buffered and waits for work without a timeout.
        assert recorder.flush()
        recorder.record(event("after a quiet spell"))
        assert store.wait_for(2), "the event after the quiet spell was never written"
        assert [r.record.tool for r in store.records] == ["first", "after a quiet spell"]  # type: ignore[union-attr]
    finally:
        recorder.close()
