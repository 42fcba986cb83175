"""A durable task's ``statusMessage`` kept from its call's progress: the upstream's latest
``notifications/progress`` (relayed by :mod:`foldgate.upstream.relay`) becomes the task's status line,
so a client polling ``tasks/get`` from any instance sees how far the call is.

Writes are bounded: at most one per ``min_gap_s`` (the task's poll interval: nobody reads faster), the
newest progress kept meanwhile and written with the next one; a write never reopens a settled task
(the store's ``transition`` refuses it) and a store error never fails the call."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from foldgate.errors import StoreError
from foldgate.store.tasks.base import TaskRecord, TaskStore
from foldgate.upstream.relay import Progress, listening

__all__ = ["ProgressNote", "progress_text"]

log = logging.getLogger(__name__)

_MAX_CHARS: Final = 200

Call = Callable[[], Awaitable[dict[str, Any]]]


def progress_text(progress: Progress) -> str:
    """The status line of one progress: ``"40% — indexing files"``, ``"step 3 — …"`` without a total."""
    if progress.total:
        done = f"{min(max(progress.progress / progress.total, 0.0), 1.0):.0%}"
    else:
        done = f"step {progress.progress:g}"
    line = f"{done} — {progress.message}" if progress.message else done
    # Printable only: the line is shown to agents and operators, and comes from an upstream.
    line = "".join(c if c.isprintable() else " " for c in line)
    return line[:_MAX_CHARS]


class ProgressNote:
    """Hears one call's progress and writes the newest as its task's ``statusMessage``; the task may be
    known only later (a call that outlives its window becomes a task while it runs)."""

    def __init__(self, store: TaskStore, min_gap_s: float, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.min_gap_s = min_gap_s
        self.clock = clock
        self.record: TaskRecord | None = None
        self.latest: str | None = None
        self._written: str | None = None
        self._written_at = float("-inf")

    def around(self, call: Call) -> Call:
        """``call`` run with its progress heard here."""

        async def heard() -> dict[str, Any]:
            with listening(self.heard):
                return await call()

        return heard

    def attach(self, record: TaskRecord) -> None:
        """The task this call now belongs to (its latest progress is written with the next one)."""
        self.record = record

    async def heard(self, progress: Progress) -> None:
        """One progress of the call: kept, and written when the last write is old enough."""
        self.latest = progress_text(progress)
        await self.flush()

    async def flush(self) -> None:
        """Write the newest progress when there is a task, it changed, and the gap has passed."""
        record, text, now = self.record, self.latest, self.clock()
        if record is None or text is None or text == self._written or now - self._written_at < self.min_gap_s:
            return
        self._written, self._written_at = text, now
        noted = dataclasses.replace(record, updated_at=now, status_message=text)
        try:
            await asyncio.to_thread(self.store.transition, noted)
        except StoreError as exc:
            log.warning("task %s: cannot note its progress: %s", record.task_id[:6], exc.message)
