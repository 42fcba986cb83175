"""Traces on the request path: every request belongs to a trace (the client's or a new one) whose
context upstreams are given; with a backend, spans nest under the request's server span, which is the
client's span's child, and a failure is recorded by its type alone."""

from __future__ import annotations

import re

import pytest

from foldgate.model.trace_context import current_trace_id
from foldgate.telemetry import tracing
from foldgate.telemetry.traceparent import TraceParent, parse_traceparent
from tests.tracing import by_name, recording_spans, span_hex, span_text, trace_hex

CLIENT = TraceParent("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7", sampled=True)


def test_off_the_clients_trace_is_the_requests_and_is_forwarded_unchanged() -> None:
    assert not tracing.tracing_on()
    with tracing.request_trace(CLIENT) as traced:
        assert traced is tracing.NULL_SPAN
        assert current_trace_id() == CLIENT.trace_id
        with tracing.span("foldgate.view", tenant="acme") as child:
            assert child is tracing.NULL_SPAN
            assert tracing.outgoing_traceparent() == CLIENT.header()
    assert current_trace_id() == ""
    assert tracing.outgoing_traceparent() is None


def test_off_a_request_without_a_client_trace_gets_a_new_one() -> None:
    with tracing.request_trace(None):
        trace_id = current_trace_id()
        sent = parse_traceparent(tracing.outgoing_traceparent())
    assert re.fullmatch(r"[0-9a-f]{32}", trace_id)
    assert sent is not None
    assert sent.trace_id == trace_id
    assert not sent.sampled
    with tracing.request_trace(None):
        assert current_trace_id() != trace_id


def test_on_the_request_span_is_the_clients_child_and_spans_nest_under_it() -> None:
    with recording_spans() as exporter:
        with tracing.request_trace(CLIENT, surface="direct") as request:
            request.set(tenant="acme")
            assert current_trace_id() == CLIENT.trace_id
            with (
                tracing.span("foldgate.call", server="crm", tool="find"),
                tracing.span("foldgate.upstream", "client", server="crm") as upstream,
            ):
                sent = parse_traceparent(tracing.outgoing_traceparent())
                upstream.set(outcome="ok")
        spans = by_name(exporter.get_finished_spans())
    (req,) = spans["foldgate.request"]
    (call,) = spans["foldgate.call"]
    (up,) = spans["foldgate.upstream"]
    assert {trace_hex(s) for s in (req, call, up)} == {CLIENT.trace_id}
    assert req.parent is not None
    assert f"{req.parent.span_id:016x}" == CLIENT.span_id
    assert call.parent is not None
    assert f"{call.parent.span_id:016x}" == span_hex(req)
    assert up.parent is not None
    assert f"{up.parent.span_id:016x}" == span_hex(call)
    assert sent == TraceParent(CLIENT.trace_id, span_hex(up), sampled=True)
    assert dict(req.attributes or {}) == {"foldgate.surface": "direct", "foldgate.tenant": "acme"}
    assert dict(up.attributes or {}) == {"foldgate.server": "crm", "foldgate.outcome": "ok"}


def test_on_a_request_without_a_client_trace_is_a_new_root() -> None:
    with recording_spans() as exporter:
        with tracing.request_trace(None):
            trace_id = current_trace_id()
        (req,) = exporter.get_finished_spans()
    assert req.parent is None
    assert trace_hex(req) == trace_id


def test_on_a_failure_is_recorded_by_its_type_never_its_message() -> None:
    with recording_spans() as exporter:
        with (
            pytest.raises(ValueError, match="secret"),
            tracing.request_trace(None),
            tracing.span("foldgate.call"),
        ):
            raise ValueError("secret-argument-value")
        with tracing.request_trace(None), tracing.span("foldgate.upstream") as up:
            up.fail("upstream_timeout")
        spans = by_name(exporter.get_finished_spans())
    failed = spans["foldgate.call"][0]
    assert failed.status.description == "ValueError"
    assert dict(failed.attributes or {})["error.type"] == "ValueError"
    assert failed.events == ()
    assert all("secret-argument-value" not in span_text(s) for s in exporter.get_finished_spans())
    timed_out = spans["foldgate.upstream"][0]
    assert dict(timed_out.attributes or {})["foldgate.outcome"] == "upstream_timeout"
    assert timed_out.status.description == "upstream_timeout"


def test_long_names_are_cut_in_attributes() -> None:
    with recording_spans() as exporter:
        with tracing.request_trace(None), tracing.span("foldgate.call", tool="t" * 5000):
            pass
        call = by_name(exporter.get_finished_spans())["foldgate.call"][0]
    assert len(str(dict(call.attributes or {})["foldgate.tool"])) == 256


def test_on_nothing_is_recorded_outside_a_request() -> None:
    """The console's and the admin API's reads of a view, the indexer's upstream requests: no trace of
    one span each, and no traceparent upstream."""
    with recording_spans() as exporter:
        with tracing.span("foldgate.view", tenant="acme") as view:
            assert view is tracing.NULL_SPAN
            assert tracing.outgoing_traceparent() is None
        assert exporter.get_finished_spans() == ()


def test_flush_without_a_backend_does_nothing() -> None:
    tracing.flush()
