"""Per-stage timing of requests: a tracing backend that keeps each span's own time, for a breakdown.

``foldgate bench call --breakdown`` runs a gateway with ``FOLDGATE_STAGE_LOG`` set: the wiring installs
:class:`StageTimer` as the tracing backend (:mod:`foldgate.telemetry.tracing`) instead of OpenTelemetry,
so every span the request path already opens (``foldgate.auth``, ``foldgate.quota``,
``foldgate.view``, ``foldgate.validation``, ``foldgate.param_headers``, ``foldgate.upstream``,
``foldgate.guard``, ``foldgate.activity``, ``foldgate.encode``, ``foldgate.send``, ...) is timed, and
nothing else is recorded. A span's *own* time excludes the spans opened inside it (the quota inside
authentication), so the stages add up to the request; ``foldgate.request``'s own time is what no
stage covers.

When the setting is absent nothing here is loaded: a span is the shared no-op, as with tracing off.
Each request's stages are kept in memory (bounded) and written as JSON to the file on
:meth:`StageTimer.flush` (the local server's shutdown, a Lambda invocation's end).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import Final

from foldgate.telemetry.traceparent import TraceParent
from foldgate.telemetry.tracing import NULL_SPAN, Attribute, Span, SpanKind

__all__ = ["StageTimer", "read_stage_log"]

# Requests kept: enough for a bench's p95, bounded for a long-running process.
_MAX_REQUESTS: Final = 50_000


class _Frame:
    __slots__ = ("children",)

    def __init__(self) -> None:
        self.children = 0.0


_TRACE: ContextVar[TraceParent | None] = ContextVar("foldgate_stage_trace", default=None)
_FRAME: ContextVar[_Frame | None] = ContextVar("foldgate_stage_frame", default=None)
# The running request's stages: own ms summed by name (a stage entered twice counts once, summed).
_REQUEST: ContextVar[dict[str, float] | None] = ContextVar("foldgate_stage_request", default=None)


class StageTimer:
    """A tracing backend recording each span's own duration (ms) by span name."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        # One record per request (stage -> own ms, and "total"), in the order requests ended.
        self.requests: list[dict[str, float]] = []

    def _add(self, stages: dict[str, float]) -> None:
        if len(self.requests) < _MAX_REQUESTS:
            self.requests.append(stages)

    @contextlib.contextmanager
    def _timed(self, name: str) -> Iterator[None]:
        parent = _FRAME.get()
        frame = _Frame()
        token = _FRAME.set(frame)
        started = time.perf_counter()
        try:
            yield
        finally:
            elapsed = (time.perf_counter() - started) * 1000
            _FRAME.reset(token)
            if parent is not None:
                parent.children += elapsed
            stages = _REQUEST.get()
            if stages is not None:
                stages[name] = stages.get(name, 0.0) + elapsed - frame.children
            else:  # outside a request (a background task): a record of its own
                self._add({name: elapsed - frame.children})

    @contextlib.contextmanager
    def request_span(
        self, name: str, parent: TraceParent | None, attributes: dict[str, Attribute]
    ) -> Iterator[tuple[Span, str]]:
        """The request, timed; its trace is the client's or a new one (as with tracing off)."""
        started = time.perf_counter()
        stages: dict[str, float] = {}
        request = _REQUEST.set(stages)
        # What the request's trace costs with tracing off too: its id (new or the client's) in context.
        trace = parent or TraceParent.new()
        token = _TRACE.set(trace)
        stages["foldgate.trace"] = (time.perf_counter() - started) * 1000
        try:
            with self._timed(name):
                yield NULL_SPAN, trace.trace_id
        finally:
            _TRACE.reset(token)
            _REQUEST.reset(request)
            stages["total"] = (time.perf_counter() - started) * 1000
            self._add(stages)

    @contextlib.contextmanager
    def span(self, name: str, kind: SpanKind, attributes: dict[str, Attribute]) -> Iterator[Span]:
        """One stage, timed (its own time: the stages opened inside it are theirs)."""
        with self._timed(name):
            yield NULL_SPAN

    def current(self) -> TraceParent | None:
        """The request's trace (what an upstream is told, as with tracing off)."""
        return _TRACE.get()

    def flush(self) -> None:
        """Write every request's record so far to the file (JSON: a list of stage -> ms objects)."""
        self.path.write_text(json.dumps(self.requests))


def read_stage_log(path: str | Path) -> list[dict[str, float]]:
    """The records a :class:`StageTimer` wrote (empty when the file is absent)."""
    p = Path(path)
    if not p.exists():
        return []
    data: list[dict[str, float]] = json.loads(p.read_text())
    return data
