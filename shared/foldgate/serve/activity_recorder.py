"""Recording activity off the hot path: a bounded buffer drained in batches by a writer thread.

``record`` appends to an in-memory buffer under a lock and returns: no I/O, no store call, no
exception (about a microsecond at p50, ``foldgate bench activity``). When the buffer holds
``capacity`` events, new ones are dropped and counted. A writer thread (started on the first event)
takes the buffer in batches of ``batch_size`` (25: one DynamoDB BatchWriteItem) when a batch is full,
or all of it once the oldest event has waited ``max_age_s``; each event's expiry is its time plus its
tenant's ``activity.retention_days``. A store that fails loses that batch, counted, and nothing else:
the next batch tries again.

**On Lambda** the same thread does the work, and this is why it suffices. The handler returns the
response first; the writer runs beside requests, never in front of one. Between invocations the
instance is frozen and the thread with it; it resumes with the next invocation, whose own events are
appended meanwhile. Nothing is written "after the response" in a hook the runtime may never run: a
batch is written when a batch exists (``record`` wakes the writer when the buffer reaches
``batch_size``, or when the oldest buffered event is older than ``max_age_s``; a thawed writer
whose timed wait has passed writes at once). At steady load that is one BatchWriteItem per 25 calls
(the target was at most one per 10); below about ``batch_size / max_age_s`` calls per second per
instance the age bound decides, and the wiring sets it to 10 s in the cloud to keep writes amortised.
A write a freeze interrupts resumes on thaw (botocore retries a dropped connection; a batch that still
fails is dropped and counted). What an instance still buffers when Lambda reclaims it is lost: at
most ``batch_size - 1`` events, or those of its last ``max_age_s``. That loss is the price of never
delaying a response; the drop counters (:func:`recorder_stats`) and the metrics make it visible.

Locally the thread flushes every second at most, in batches of up to :data:`SQLITE_BATCH` events
(one SQLite transaction each), and :meth:`BufferedRecorder.close` (called at shutdown) writes what is
left.
"""

from __future__ import annotations

import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from foldgate.model.activity import ActivityRecord
from foldgate.store.activity.base import ActivityStore, StoredRecord

__all__ = ["SQLITE_BATCH", "BufferedRecorder", "RecorderStats", "recorder_stats"]

log = logging.getLogger(__name__)

DAY: Final = 86_400
DEFAULT_RETENTION_DAYS: Final = 7
# Events per SQLite transaction at most: about a second of a busy local gateway's calls (a commit per
# 25 events cost twice the writer's CPU per event, ``foldgate bench activity``).
SQLITE_BATCH: Final = 500
# A failing store is reported at most this often (every batch fails during an outage).
_WARN_EVERY_S: Final = 60.0

_LIVE: weakref.WeakSet[BufferedRecorder] = weakref.WeakSet()


@dataclass(frozen=True, slots=True)
class RecorderStats:
    """Counts since the recorder was made: ``recorded`` accepted into the buffer, ``written`` stored,
    ``dropped_full`` refused by a full buffer, ``dropped_store`` lost with a failed batch,
    ``dropped_closed`` handed in after close, ``batches`` store writes, ``buffered`` waiting now."""

    recorded: int = 0
    written: int = 0
    dropped_full: int = 0
    dropped_store: int = 0
    dropped_closed: int = 0
    batches: int = 0
    buffered: int = 0

    @property
    def dropped(self) -> int:
        """Every event lost, whatever the reason."""
        return self.dropped_full + self.dropped_store + self.dropped_closed


_FIELDS: Final = tuple(RecorderStats.__dataclass_fields__)


def recorder_stats() -> RecorderStats:
    """The counts of every live recorder of this process, summed (for metrics and health output)."""
    total = dict.fromkeys(_FIELDS, 0)
    for recorder in list(_LIVE):
        stats = recorder.stats()
        for name in _FIELDS:
            total[name] += getattr(stats, name)
    return RecorderStats(**total)


class BufferedRecorder:
    """A :class:`~foldgate.model.activity.Recorder` that buffers events and writes them in batches on
    a thread of its own. ``retention_days`` gives a tenant's retention (asked on the writer thread;
    an error there means the default, 7)."""

    def __init__(
        self,
        store: ActivityStore,
        retention_days: Callable[[str], int] | None = None,
        *,
        batch_size: int = 25,
        max_age_s: float = 1.0,
        capacity: int = 10_000,
    ) -> None:
        if batch_size < 1 or capacity < batch_size or max_age_s <= 0:
            raise ValueError("batch_size >= 1, capacity >= batch_size and max_age_s > 0")
        self.store = store
        self._retention = retention_days or (lambda _tenant: DEFAULT_RETENTION_DAYS)
        self.batch_size = batch_size
        self.max_age_s = max_age_s
        self.capacity = capacity
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Condition(self._lock)
        self._buffer: deque[ActivityRecord] = deque()
        self._oldest = 0.0  # monotonic time the oldest buffered event arrived
        self._flush_asked = 0  # flush() generations asked for / done
        self._flush_done = 0
        self._closing = False
        self._thread: threading.Thread | None = None
        self._writing = 0
        self._counts = dict.fromkeys(_FIELDS, 0)
        self._warned: float | None = None
        _LIVE.add(self)

    def record(self, event: ActivityRecord) -> None:
        """Buffer the event (or drop and count it); returns at once, never raises."""
        try:
            now = time.monotonic()
            with self._lock:
                if self._closing:
                    self._counts["dropped_closed"] += 1
                    return
                size = len(self._buffer)
                if size >= self.capacity:
                    self._counts["dropped_full"] += 1
                    return
                if size == 0:
                    self._oldest = now
                self._buffer.append(event)
                self._counts["recorded"] += 1
                # The first event of an empty buffer wakes the writer too: idle, it waits without a
                # timeout and would never start this event's age bound (it sat there until another came).
                wake = size == 0 or size + 1 >= self.batch_size or now - self._oldest >= self.max_age_s
                if self._thread is None:
                    self._start()
            if wake:
                self._wake.set()
        except Exception:  # recording must never fail the call it describes
            return

    def _start(self) -> None:
        """Start the writer (caller holds the lock)."""
        self._thread = threading.Thread(target=self._run, name="foldgate-activity-writer", daemon=True)
        self._thread.start()

    def stats(self) -> RecorderStats:
        """This recorder's counts."""
        with self._lock:
            return RecorderStats(**(self._counts | {"buffered": len(self._buffer)}))

    def flush(self, timeout: float = 10.0) -> bool:
        """Write everything buffered now; True when done within ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._lock:
            if self._thread is None:
                return not self._buffer
            self._flush_asked += 1
            wanted = self._flush_asked
        self._wake.set()
        with self._idle:
            while self._flush_done < wanted:
                left = deadline - time.monotonic()
                if left <= 0 or not self._thread.is_alive():
                    return False
                self._idle.wait(left)
        return True

    def close(self, timeout: float = 10.0) -> None:
        """Write what is buffered, stop the writer; events recorded afterwards are dropped (counted)."""
        self.flush(timeout)
        with self._lock:
            self._closing = True
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout)

    def _take(self) -> tuple[list[ActivityRecord], int] | float | None:
        """Under the lock: the events to write now and the flush generation it completes, or how long to
        wait for more (None: until woken)."""
        size = len(self._buffer)
        age = time.monotonic() - self._oldest if size else 0.0
        flushing = self._flush_asked > self._flush_done
        if flushing or self._closing or (size and age >= self.max_age_s):
            count = size
        elif size >= self.batch_size:
            count = size - size % self.batch_size  # whole batches; the rest waits to fill one
        else:
            return self.max_age_s - age if size else None
        taken = [self._buffer.popleft() for _ in range(count)]
        self._oldest = time.monotonic() if self._buffer else 0.0
        return taken, self._flush_asked

    def _run(self) -> None:
        while True:
            self._wake.clear()
            with self._lock:
                step = self._take()
                done = self._closing and not self._buffer
            if not isinstance(step, tuple):
                self._wake.wait(step)
                continue
            events, generation = step
            self._write(events)
            with self._idle:
                self._flush_done = max(self._flush_done, generation)
                self._idle.notify_all()
            if done:
                return

    def _write(self, events: list[ActivityRecord]) -> None:
        """Store the events in batches; a failed batch is dropped and counted, never retried here."""
        for start in range(0, len(events), self.batch_size):
            batch = events[start : start + self.batch_size]
            try:
                stored = [StoredRecord(e.with_id(), e.at + self._days(e.tenant) * DAY) for e in batch]
                self.store.put_many(stored)
            except Exception as exc:  # a store outage loses events, never the writer
                with self._lock:
                    self._counts["dropped_store"] += len(batch)
                    warn = self._warned is None or time.monotonic() - self._warned >= _WARN_EVERY_S
                    if warn:
                        self._warned = time.monotonic()
                if warn:
                    log.warning("activity events dropped: the store failed (%s)", type(exc).__name__)
                continue
            with self._lock:
                self._counts["written"] += len(batch)
                self._counts["batches"] += 1

    def _days(self, tenant: str) -> int:
        try:
            days = int(self._retention(tenant))
        except Exception:  # an unreadable config keeps the default retention
            return DEFAULT_RETENTION_DAYS
        return days if days > 0 else DEFAULT_RETENTION_DAYS
