"""The OpenTelemetry backend of :mod:`foldgate.telemetry.tracing`, and its OTLP/HTTP export.

Imported only where tracing is on (the wiring loads it when OTLP export is configured): the SDK costs
tens of milliseconds to import, which a cold start with tracing off never pays.

foldgate's spans use a tracer provider of their own, never the global one, and keep their own notion of
the current span: the MCP SDK opens spans on the global provider and sets OpenTelemetry's current
context inside its handlers, which must neither reparent nor receive foldgate's spans.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
from opentelemetry.trace import NonRecordingSpan, SpanContext, Status, StatusCode, TraceFlags

from foldgate import __version__
from foldgate.telemetry.traceparent import TraceParent
from foldgate.telemetry.tracing import NULL_SPAN, Attribute, Span, SpanKind, attributes_of

__all__ = ["OtelBackend", "otlp_backend", "otlp_exporter", "tracer_provider"]

_KINDS = {
    "internal": trace.SpanKind.INTERNAL,
    "server": trace.SpanKind.SERVER,
    "client": trace.SpanKind.CLIENT,
}
_CURRENT: ContextVar[trace.Span | None] = ContextVar("foldgate_otel_span", default=None)
_FLUSH_MS = 2_000  # the most a Lambda invocation waits for its spans to be exported


class _Recording:
    """One OpenTelemetry span behind :class:`foldgate.telemetry.tracing.Span`."""

    __slots__ = ("failed", "span")

    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self.failed = False

    def set(self, **attributes: Attribute) -> None:
        self.span.set_attributes(attributes_of(attributes))

    def fail(self, outcome: str) -> None:
        self.failed = True
        self.span.set_attribute("foldgate.outcome", outcome)
        self.span.set_status(Status(StatusCode.ERROR, outcome))


class OtelBackend:
    """Records foldgate's spans with ``provider`` (its processors decide where they go)."""

    def __init__(self, provider: TracerProvider) -> None:
        self.provider = provider
        self._tracer = provider.get_tracer("foldgate", __version__)

    @contextlib.contextmanager
    def request_span(
        self, name: str, parent: TraceParent | None, attributes: dict[str, Attribute]
    ) -> Iterator[tuple[_Recording, str]]:
        """A server span, child of the client's span when it sent one, else the root of a new trace."""
        context = Context()  # empty: a new trace, whatever the ambient OpenTelemetry context holds
        if parent is not None:
            remote = SpanContext(
                int(parent.trace_id, 16),
                int(parent.span_id, 16),
                is_remote=True,
                trace_flags=TraceFlags(TraceFlags.SAMPLED if parent.sampled else TraceFlags.DEFAULT),
            )
            context = trace.set_span_in_context(NonRecordingSpan(remote), context)
        with self._run(name, "server", context, attributes) as recording:
            yield recording, f"{recording.span.get_span_context().trace_id:032x}"

    def span(
        self, name: str, kind: SpanKind, attributes: dict[str, Attribute]
    ) -> contextlib.AbstractContextManager[Span]:
        """A child of the current foldgate span; none outside a request (the console's and the admin
        API's reads, the indexer), which would otherwise each start a trace of one span."""
        current = _CURRENT.get()
        if current is None:
            return NULL_SPAN
        return self._run(name, kind, trace.set_span_in_context(current, Context()), attributes)

    @contextlib.contextmanager
    def _run(
        self, name: str, kind: SpanKind, context: Context, attributes: dict[str, Attribute]
    ) -> Iterator[_Recording]:
        # Exceptions are never recorded as events (their messages may quote arguments or upstream
        # text): a failure is its type name, below.
        opened = self._tracer.start_span(
            name,
            context=context,
            kind=_KINDS[kind],
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        )
        recording = _Recording(opened)
        token = _CURRENT.set(opened)
        try:
            yield recording
        except BaseException as exc:
            if not recording.failed:
                opened.set_attribute("error.type", type(exc).__name__)
                opened.set_status(Status(StatusCode.ERROR, type(exc).__name__))
            raise
        finally:
            _CURRENT.reset(token)
            opened.end()

    def current(self) -> TraceParent | None:
        """The current foldgate span as a traceparent (None outside any span)."""
        current = _CURRENT.get()
        if current is None:
            return None
        ctx = current.get_span_context()
        if not ctx.is_valid:
            return None
        return TraceParent(f"{ctx.trace_id:032x}", f"{ctx.span_id:016x}", ctx.trace_flags.sampled)

    def flush(self) -> None:
        """Export every ended span now (at most ~2 s)."""
        self.provider.force_flush(_FLUSH_MS)


def tracer_provider(processor: SpanProcessor, *, service: str, sample_ratio: float = 1.0) -> TracerProvider:
    """A provider of foldgate's own: ``service`` names it; a client's sampling decision is followed,
    and a trace foldgate starts is sampled at ``sample_ratio``."""
    provider = TracerProvider(
        resource=Resource.create({"service.name": service, "service.version": __version__}),
        sampler=ParentBased(TraceIdRatioBased(sample_ratio)),
    )
    provider.add_span_processor(processor)
    return provider


def otlp_exporter(endpoint: str, headers: Mapping[str, str], timeout_s: float) -> SpanExporter:
    """OTLP/HTTP (protobuf) export to ``endpoint`` (the full traces URL)."""
    # The exporter (and its HTTP client) loads only where OTLP export is configured.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    return OTLPSpanExporter(endpoint=endpoint, headers=dict(headers), timeout=timeout_s)


class _Deferred(SpanExporter):
    """An exporter built on its first export, which runs on the batch processor's own thread: neither
    init nor a request waits for the OTLP exporter's import (its HTTP client and protobuf, ~1/3 of
    what tracing adds to a cold start)."""

    def __init__(self, build: Callable[[], SpanExporter]) -> None:
        self._build = build
        self._inner: SpanExporter | None = None
        self._lock = threading.Lock()

    def _exporter(self) -> SpanExporter:
        with self._lock:
            if self._inner is None:
                self._inner = self._build()
            return self._inner

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self._exporter().export(spans)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self._inner.force_flush(timeout_millis) if self._inner is not None else True

    def shutdown(self) -> None:
        if self._inner is not None:
            self._inner.shutdown()


def otlp_backend(
    endpoint: str, headers: Mapping[str, str], timeout_s: float, *, service: str, sample_ratio: float = 1.0
) -> OtelBackend:
    """The backend exporting to an OTLP/HTTP collector in batches, off the request path."""
    processor = BatchSpanProcessor(_Deferred(lambda: otlp_exporter(endpoint, headers, timeout_s)))
    return OtelBackend(tracer_provider(processor, service=service, sample_ratio=sample_ratio))
