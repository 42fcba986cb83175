"""Spans on the request path, and the trace context every upstream request carries.

Every MCP request belongs to a trace (:func:`request_trace`): the client's (its W3C ``traceparent``),
or a new one. Its id is the request's :func:`foldgate.model.trace_context.current_trace_id` (the
activity log records it), and each upstream request carries a ``traceparent`` of that trace
(:func:`outgoing_traceparent`), whether or not spans are recorded.

Spans are recorded only when a backend is installed (:func:`install`; the wiring installs the
OpenTelemetry one, :mod:`foldgate.telemetry.otel`, when OTLP export is configured). Without one a
span is a shared object that does nothing and OpenTelemetry is never imported: a cold start pays
nothing for tracing it does not do.

Attributes are a fixed set (:data:`ATTRIBUTES`) naming who and what (tenant, server, tool, surface,
method) and how it ended (an outcome word foldgate chose); never an argument or result value, a token,
or an error message, which may quote either. A failure is recorded as its exception's type name only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Final, Literal, Protocol

from foldgate.model.trace_context import in_trace
from foldgate.telemetry.traceparent import TraceParent

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

__all__ = [
    "ATTRIBUTES",
    "Backend",
    "Span",
    "SpanKind",
    "flush",
    "install",
    "outgoing_traceparent",
    "request_trace",
    "span",
    "tracing_on",
]

SpanKind = Literal["internal", "server", "client"]
Attribute = str | bool | int | float

# The only attributes a span carries: keyword -> OpenTelemetry attribute name.
ATTRIBUTES: Final = {
    "tenant": "foldgate.tenant",
    "server": "foldgate.server",
    "tool": "foldgate.tool",
    "outcome": "foldgate.outcome",
    "surface": "foldgate.surface",
    "method": "mcp.method.name",
    "cached": "foldgate.view.cached",
}
_MAX_VALUE_CHARS: Final = 256


class Span(Protocol):
    """A span being recorded (or the one that records nothing)."""

    def set(self, **attributes: Attribute) -> None:
        """Add attributes (keywords of :data:`ATTRIBUTES`)."""
        ...

    def fail(self, outcome: str) -> None:
        """Mark the span failed with ``outcome`` (a word foldgate chose, e.g. ``upstream_timeout``)."""
        ...


class Backend(Protocol):
    """What records spans (:class:`foldgate.telemetry.otel.OtelBackend`)."""

    def request_span(
        self, name: str, parent: TraceParent | None, attributes: dict[str, Attribute]
    ) -> AbstractContextManager[tuple[Span, str]]:
        """A server span for one request, child of the client's ``parent`` (a new trace without one);
        yields the span and its trace id."""
        ...

    def span(
        self, name: str, kind: SpanKind, attributes: dict[str, Attribute]
    ) -> AbstractContextManager[Span]:
        """A child of the running request's current span (nothing recorded outside a request)."""
        ...

    def current(self) -> TraceParent | None:
        """The current span's place in its trace (the parent an upstream should name), if any."""
        ...

    def flush(self) -> None:
        """Export what has ended (bounded in time; a Lambda invocation calls it before returning)."""
        ...


class _NullSpan:
    """The span when tracing is off: its own context manager, doing nothing."""

    __slots__ = ()

    def __enter__(self) -> _NullSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, **attributes: Attribute) -> None:
        """Nothing to record."""

    def fail(self, outcome: str) -> None:
        """Nothing to record."""


NULL_SPAN: Final = _NullSpan()

_backend: Backend | None = None
# The running request's trace when no backend records spans: what upstreams are told.
_REQUEST: ContextVar[TraceParent | None] = ContextVar("foldgate_request_trace", default=None)


def install(backend: Backend | None) -> Backend | None:
    """Record spans with ``backend`` from now on (None: stop recording); returns the one before."""
    global _backend
    previous, _backend = _backend, backend
    return previous


def tracing_on() -> bool:
    """Whether spans are being recorded."""
    return _backend is not None


def attributes_of(values: dict[str, Attribute]) -> dict[str, Attribute]:
    """``values`` under their OpenTelemetry names, strings cut to a bounded length (names come from
    tenant configs and upstream listings)."""
    out: dict[str, Attribute] = {}
    for key, value in values.items():
        if isinstance(value, str) and len(value) > _MAX_VALUE_CHARS:
            value = value[:_MAX_VALUE_CHARS]
        out[ATTRIBUTES[key]] = value
    return out


def request_trace(incoming: TraceParent | None, **attributes: Attribute) -> AbstractContextManager[Span]:
    """Within the block, the running request belongs to the client's trace (``incoming``), or a new
    one; with a backend, inside a server span named ``foldgate.request``."""
    backend = _backend
    if backend is None:
        return _UntracedRequest(incoming)
    return _traced_request(backend, incoming, attributes)


class _UntracedRequest:
    """A request's trace with no backend: the trace id set for the block, no span (a class, not a
    generator: every request enters one)."""

    __slots__ = ("_incoming", "_request", "_trace_id")

    def __init__(self, incoming: TraceParent | None) -> None:
        self._incoming = incoming

    def __enter__(self) -> Span:
        trace = self._incoming or TraceParent.new()
        self._request = _REQUEST.set(trace)
        self._trace_id = in_trace(trace.trace_id)
        self._trace_id.__enter__()
        return NULL_SPAN

    def __exit__(self, *exc: object) -> None:
        try:
            self._trace_id.__exit__(*exc)
        finally:
            _REQUEST.reset(self._request)


@contextlib.contextmanager
def _traced_request(
    backend: Backend, incoming: TraceParent | None, attributes: dict[str, Attribute]
) -> Iterator[Span]:
    with (
        backend.request_span("foldgate.request", incoming, attributes_of(attributes)) as (
            recorded,
            trace_id,
        ),
        in_trace(trace_id),
    ):
        yield recorded


def span(name: str, kind: SpanKind = "internal", **attributes: Attribute) -> AbstractContextManager[Span]:
    """A child span of the running request (one shared no-op without a backend or outside a
    request)."""
    backend = _backend
    if backend is None:
        return NULL_SPAN
    return backend.span(name, kind, attributes_of(attributes))


def outgoing_traceparent() -> str | None:
    """The ``traceparent`` for an upstream request made now: the current span's with a backend, else
    the request's trace as it came in (or as started here); None outside any request (the indexer)."""
    backend = _backend
    trace = backend.current() if backend is not None else _REQUEST.get()
    return trace.header() if trace is not None else None


def flush() -> None:
    """Export the spans that have ended, if spans are recorded (never raises)."""
    backend = _backend
    if backend is not None:
        with contextlib.suppress(Exception):  # a collector outage must never fail an invocation
            backend.flush()
