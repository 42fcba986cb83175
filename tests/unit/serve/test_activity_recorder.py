"""The buffered recorder: ``record`` never waits for the store nor raises, events reach the store in
batches of 25 (or all of them once the oldest has waited ``max_age_s``), a full buffer or a failing
store drops events and counts them, expiry is the event's time plus its tenant's retention, and close
writes what is left."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from foldgate.errors import StoreError
from foldgate.model.activity import ActivityEvent
from foldgate.serve.activity_recorder import DAY, BufferedRecorder, recorder_stats
from foldgate.store.activity.base import ActivityPage, ActivityQuery, ActivityStore, StoredRecord

WAIT = 10.0  # seconds: an upper bound for events that happen in microseconds, never a sleep


class MemoryStore(ActivityStore):
    """Keeps batches in memory; can hold writers (``gate``) or fail them (``failing``)."""

    def __init__(self) -> None:
        self.batches: list[list[StoredRecord]] = []
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.failing = False
        self.changed = threading.Condition()

    def put_many(self, records: Sequence[StoredRecord]) -> None:
        self.entered.set()
        assert self.gate.wait(WAIT)
        with self.changed:
            if self.failing:
                self.changed.notify_all()
                raise StoreError("table unavailable")
            self.batches.append(list(records))
            self.changed.notify_all()

    def query(self, query: ActivityQuery) -> ActivityPage:
        raise NotImplementedError

    def written(self) -> int:
        return sum(len(b) for b in self.batches)

    def wait_for(self, count: int) -> None:
        with self.changed:
            assert self.changed.wait_for(lambda: self.written() >= count, WAIT)


def event(i: int = 0, tenant: str = "acme") -> ActivityEvent:
    return ActivityEvent(tenant, "tools/call", "mcp", "ok", at=1_800_000_000.0 + i, tool=f"t{i}")


@pytest.fixture
def store() -> MemoryStore:
    return MemoryStore()


@pytest.fixture
def recorder(store: MemoryStore) -> Iterator[BufferedRecorder]:
    r = BufferedRecorder(store, max_age_s=3600)
    yield r
    store.gate.set()
    r.close()


def test_record_returns_while_the_store_is_stuck(store: MemoryStore, recorder: BufferedRecorder) -> None:
    store.gate.clear()
    for i in range(25):
        recorder.record(event(i))
    assert store.entered.wait(WAIT)  # the writer is inside put_many, held
    for i in range(25, 100):
        recorder.record(event(i))  # each returns though the store has not answered
    assert recorder.stats().recorded == 100
    store.gate.set()
    assert recorder.flush()
    assert store.written() == 100


def test_events_are_written_in_whole_batches_of_25_and_the_rest_waits(
    store: MemoryStore, recorder: BufferedRecorder
) -> None:
    for i in range(60):
        recorder.record(event(i))
    store.wait_for(50)
    assert [len(b) for b in store.batches] == [25, 25]
    assert recorder.stats().buffered == 10
    assert recorder.flush()
    assert [len(b) for b in store.batches] == [25, 25, 10]
    assert [s.record.tool for b in store.batches for s in b] == [f"t{i}" for i in range(60)]
    assert recorder.stats().batches == 3


def test_a_part_batch_is_written_once_its_oldest_event_is_old(store: MemoryStore) -> None:
    recorder = BufferedRecorder(store, max_age_s=0.05)
    try:
        recorder.record(event(1))
        store.wait_for(1)  # no flush asked: the age bound wrote it
        assert [len(b) for b in store.batches] == [1]
    finally:
        recorder.close()


def test_a_full_buffer_drops_new_events_and_counts_them(store: MemoryStore) -> None:
    recorder = BufferedRecorder(store, batch_size=25, capacity=25, max_age_s=3600)
    store.gate.clear()
    for i in range(25):
        recorder.record(event(i))
    assert store.entered.wait(WAIT)  # the first 25 are taken, the writer is held
    for i in range(25, 55):
        recorder.record(event(i))
    stats = recorder.stats()
    assert (stats.recorded, stats.dropped_full, stats.buffered) == (50, 5, 25)
    store.gate.set()
    recorder.close()
    assert store.written() == 50


def test_a_store_outage_drops_the_batch_counts_it_and_the_next_batch_is_written(
    store: MemoryStore, recorder: BufferedRecorder
) -> None:
    store.failing = True
    for i in range(25):
        recorder.record(event(i))
    assert recorder.flush()
    assert recorder.stats().dropped_store == 25
    store.failing = False
    recorder.record(event(99))
    assert recorder.flush()
    stats = recorder.stats()
    assert (stats.written, stats.dropped_store, stats.dropped) == (1, 25, 25)


def test_a_broken_event_is_dropped_and_the_writer_keeps_going(
    store: MemoryStore, recorder: BufferedRecorder
) -> None:
    recorder.record(object())  # type: ignore[arg-type]
    assert recorder.flush()
    recorder.record(event(1))
    assert recorder.flush()
    assert recorder.stats().dropped_store == 1
    assert store.written() == 1


def test_expiry_is_the_events_time_plus_its_tenants_retention(store: MemoryStore) -> None:
    def retention(tenant: str) -> int:
        if tenant == "broken":
            raise RuntimeError("config unreadable")
        return {"acme": 30}.get(tenant, 7)

    recorder = BufferedRecorder(store, retention, max_age_s=3600)
    for tenant in ("acme", "globex", "broken"):
        recorder.record(event(0, tenant))
    recorder.close()
    expiry = {s.record.tenant: s.expires_at - s.record.at for b in store.batches for s in b}
    assert expiry == {"acme": 30 * DAY, "globex": 7 * DAY, "broken": 7 * DAY}
    assert all(s.record.event_id for b in store.batches for s in b)


def test_close_writes_what_is_left_and_later_events_are_dropped(store: MemoryStore) -> None:
    recorder = BufferedRecorder(store, max_age_s=3600)
    for i in range(3):
        recorder.record(event(i))
    recorder.close()
    assert store.written() == 3
    recorder.record(event(4))
    assert recorder.stats().dropped_closed == 1
    assert store.written() == 3


def test_a_recorder_that_never_recorded_starts_no_thread_and_flushes_at_once(store: MemoryStore) -> None:
    before = threading.active_count()
    recorder = BufferedRecorder(store)
    assert recorder.flush(timeout=0)
    recorder.close()
    assert threading.active_count() == before


def test_the_process_stats_sum_every_live_recorder(store: MemoryStore) -> None:
    before = recorder_stats()
    first, second = BufferedRecorder(store, max_age_s=3600), BufferedRecorder(store, max_age_s=3600)
    try:
        first.record(event(1))
        second.record(event(2))
        second.record(event(3))
        assert recorder_stats().recorded - before.recorded == 3
        assert recorder_stats().buffered - before.buffered == 3
    finally:
        first.close()
        second.close()


@pytest.mark.parametrize("options", [{"batch_size": 0}, {"capacity": 10}, {"max_age_s": 0}])
def test_nonsense_sizes_are_refused(store: MemoryStore, options: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="batch_size"):
        BufferedRecorder(store, **options)
