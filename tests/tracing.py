"""Recording foldgate's spans in a test: the OpenTelemetry backend over the SDK's in-memory exporter,
installed for the block and removed after (tracing is process-wide, as in a Lambda instance)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from foldgate.telemetry import tracing
from foldgate.telemetry.otel import OtelBackend, tracer_provider


@contextlib.contextmanager
def recording_spans() -> Iterator[InMemorySpanExporter]:
    """Spans foldgate ends inside the block, exported at once to the yielded exporter."""
    exporter = InMemorySpanExporter()
    provider = tracer_provider(SimpleSpanProcessor(exporter), service="foldgate-test")
    previous = tracing.install(OtelBackend(provider))
    try:
        yield exporter
    finally:
        tracing.install(previous)
        provider.shutdown()


def span_text(span: ReadableSpan) -> str:
    """Everything a span carries that an exporter would send, as one string to search for canaries:
    name, attributes, events (and their attributes), links, status and resource."""
    return json.dumps(
        {
            "name": span.name,
            "attributes": dict(span.attributes or {}),
            "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in span.events],
            "links": [dict(link.attributes or {}) for link in span.links],
            "status": [str(span.status.status_code), span.status.description],
            "resource": dict(span.resource.attributes),
        },
        default=str,
    )


def by_name(spans: Any) -> dict[str, list[ReadableSpan]]:
    """Ended spans grouped by name."""
    out: dict[str, list[ReadableSpan]] = {}
    for s in spans:
        out.setdefault(s.name, []).append(s)
    return out


def trace_hex(span: ReadableSpan) -> str:
    """The span's trace id as 32 hex digits."""
    assert span.context is not None
    return f"{span.context.trace_id:032x}"


def span_hex(span: ReadableSpan) -> str:
    """The span's own id as 16 hex digits."""
    assert span.context is not None
    return f"{span.context.span_id:016x}"
