"""Several recorders behind one: each event goes to every recorder (the activity store, metrics, ...).

A recorder must return at once and never raise (:class:`foldgate.model.activity.Recorder`); this fan-out
holds every recorder it is given to that too, so one that breaks never costs the others their event
nor the call its answer.
"""

from __future__ import annotations

import logging
import threading

from foldgate.model.activity import ActivityRecord, Recorder

__all__ = ["Recorders"]

log = logging.getLogger(__name__)


class Recorders:
    """Hands each event to every recorder in turn, each guarded on its own."""

    def __init__(self, *recorders: Recorder) -> None:
        self.recorders = recorders
        # Failures per recorder (by position): logged once each, counted after that.
        self.failures = [0] * len(recorders)
        self._lock = threading.Lock()

    def record(self, event: ActivityRecord) -> None:
        """Give ``event`` to every recorder; a recorder that raises is logged (its first failure)
        and counted, and the rest still get the event."""
        for position, recorder in enumerate(self.recorders):
            try:
                recorder.record(event)
            except Exception:
                with self._lock:
                    self.failures[position] += 1
                    first = self.failures[position] == 1
                if first:  # a recorder that breaks breaks on every event: one traceback is enough
                    log.warning("recorder %s failed; its later failures are counted only",
                                type(recorder).__name__, exc_info=True)  # fmt: skip
