"""Call metrics on Lambda: embedded metric format printed by Powertools when the invocation ends, one
JSON document per (tenant, server, outcome), with the low-cardinality dimensions only."""

from __future__ import annotations

import json
from typing import Any

import pytest

from foldgate.model.activity import ActivityEvent, Actor, AuditEvent
from foldgate.telemetry.emf import EmfRecorder


def _event(**kw: Any) -> ActivityEvent:
    base: dict[str, Any] = {"tenant": "acme", "method": "tools/call", "surface": "mcp", "outcome": "ok"}
    return ActivityEvent(**{**base, **kw})


def _values(value: Any) -> list[float]:
    """A metric's values (Powertools writes a list, or one number)."""
    return [float(v) for v in value] if isinstance(value, list) else [float(value)]


def _documents(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def test_an_invocation_prints_one_emf_document_per_dimension_group(
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorder = EmfRecorder(namespace="foldgate", service="mcp")

    @recorder.log_metrics
    def handler(event: dict[str, Any], context: Any) -> str:
        recorder.record(
            _event(server="crm", gateway_ms=12.5, upstream_ms=10.0, request_bytes=80, response_bytes=400)
        )
        recorder.record(
            _event(server="crm", gateway_ms=7.5, upstream_ms=5.0, request_bytes=20, response_bytes=100)
        )
        recorder.record(
            _event(server="crm", outcome="upstream_timeout", gateway_ms=27000.0, upstream_ms=26990.0)
        )
        recorder.record(AuditEvent(tenant="acme", action="config.save", actor=Actor("console")))
        assert capsys.readouterr().out == ""  # nothing printed before the invocation ends
        return "answered"

    assert handler({}, None) == "answered"
    docs = _documents(capsys.readouterr().out)
    assert len(docs) == 2
    ok = next(d for d in docs if d["outcome"] == "ok")
    directive = ok["_aws"]["CloudWatchMetrics"][0]
    assert directive["Namespace"] == "foldgate"
    assert sorted(directive["Dimensions"][0]) == ["outcome", "server", "service", "tenant"]
    units = {m["Name"]: m["Unit"] for m in directive["Metrics"]}
    assert units == {
        "Calls": "Count",
        "GatewayMs": "Milliseconds",
        "UpstreamMs": "Milliseconds",
        "RequestBytes": "Bytes",
        "ResponseBytes": "Bytes",
    }
    assert isinstance(ok["_aws"]["Timestamp"], int)
    assert (ok["tenant"], ok["server"], ok["service"]) == ("acme", "crm", "mcp")
    assert _values(ok["Calls"]) == [2]
    assert _values(ok["GatewayMs"]) == [12.5, 7.5]
    assert _values(ok["UpstreamMs"]) == [10.0, 5.0]
    assert (_values(ok["RequestBytes"]), _values(ok["ResponseBytes"])) == ([100], [500])
    timed_out = next(d for d in docs if d["outcome"] == "upstream_timeout")
    assert _values(timed_out["Calls"]) == [1]


def test_the_next_invocation_starts_empty_and_prints_nothing_without_events(
    capsys: pytest.CaptureFixture[str],
) -> None:
    recorder = EmfRecorder(namespace="foldgate", service="mcp")
    recorder.record(_event(server="crm"))
    recorder.flush()
    assert len(_documents(capsys.readouterr().out)) == 1
    recorder.flush()
    assert capsys.readouterr().out == ""


def test_a_call_without_upstream_time_has_no_upstream_metric(capsys: pytest.CaptureFixture[str]) -> None:
    recorder = EmfRecorder(namespace="foldgate", service="mcp")
    recorder.record(_event(tool="retrieve_tools", gateway_ms=2.0))
    recorder.flush()
    (doc,) = _documents(capsys.readouterr().out)
    assert doc["server"] == "-"
    assert "UpstreamMs" not in doc
    assert "UpstreamMs" not in {m["Name"] for m in doc["_aws"]["CloudWatchMetrics"][0]["Metrics"]}


def test_a_failing_handler_still_flushes_its_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    recorder = EmfRecorder(namespace="foldgate", service="mcp")

    @recorder.log_metrics
    def handler() -> None:
        recorder.record(_event(server="crm", outcome="internal_error"))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        handler()
    assert [d["outcome"] for d in _documents(capsys.readouterr().out)] == ["internal_error"]
