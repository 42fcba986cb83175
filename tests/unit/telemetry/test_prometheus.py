"""Call metrics in Prometheus text: a recorded event shows as counters and histograms labelled by
tenant, server and outcome; operator events are not metrics; label sets are bounded."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from foldgate.model.activity import ActivityEvent, Actor, AuditEvent
from foldgate.telemetry.prometheus import OVERFLOW, PrometheusRecorder


def _samples(recorder: PrometheusRecorder) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    body, content_type = recorder.render()
    assert content_type.startswith("text/plain")
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(body.decode())
        for s in family.samples
    }


def _event(**kw: object) -> ActivityEvent:
    base: dict[str, object] = {"tenant": "acme", "method": "tools/call", "surface": "mcp", "outcome": "ok"}
    return ActivityEvent(**{**base, **kw})  # type: ignore[arg-type]


LABELS = (("outcome", "ok"), ("server", "crm"), ("tenant", "acme"))


def test_a_recorded_call_shows_in_the_text() -> None:
    recorder = PrometheusRecorder()
    recorder.record(
        _event(server="crm", gateway_ms=12.0, upstream_ms=8.0, request_bytes=100, response_bytes=900)
    )
    recorder.record(_event(server="crm", gateway_ms=3.0, upstream_ms=None))
    got = _samples(recorder)
    assert got[("foldgate_calls_total", LABELS)] == 2
    assert got[("foldgate_gateway_duration_seconds_count", LABELS)] == 2
    assert abs(got[("foldgate_gateway_duration_seconds_sum", LABELS)] - 0.015) < 1e-9
    assert got[("foldgate_upstream_duration_seconds_count", LABELS)] == 1
    assert got[("foldgate_request_bytes_total", LABELS)] == 100
    assert got[("foldgate_response_bytes_total", LABELS)] == 900


def test_a_call_without_a_server_is_labelled_dash_and_operator_events_are_not_metrics() -> None:
    recorder = PrometheusRecorder()
    recorder.record(_event(tool="retrieve_tools", outcome="invalid_arguments"))
    recorder.record(AuditEvent(tenant="acme", action="token.create", actor=Actor("cli")))
    got = _samples(recorder)
    calls = {k: v for k, v in got.items() if k[0] == "foldgate_calls_total"}
    assert calls == {
        ("foldgate_calls_total", (("outcome", "invalid_arguments"), ("server", "-"), ("tenant", "acme"))): 1
    }


def test_label_sets_past_the_bound_are_counted_together() -> None:
    recorder = PrometheusRecorder(max_series=2)
    for server in ("a", "b", "c", "d"):
        recorder.record(_event(server=server))
    got = _samples(recorder)
    servers = sorted(dict(k[1])["server"] for k in got if k[0] == "foldgate_calls_total")
    assert servers == [OVERFLOW, "a", "b"]
    assert got[("foldgate_calls_total", (("outcome", "ok"), ("server", OVERFLOW), ("tenant", OVERFLOW)))] == 2
