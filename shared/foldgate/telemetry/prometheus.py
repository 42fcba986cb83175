"""Call metrics in Prometheus' text format, for the local gateway's ``GET /metrics``.

A :class:`~foldgate.model.activity.Recorder`: every call event adds to counters and histograms
labelled by tenant, server and outcome (a bounded number of label sets; calls past the bound are
counted under tenant and server ``_other``). Operator events are not metrics. The registry is this
recorder's own, never the process-wide default, so two gateways in one process (tests) do not mix.
"""

from __future__ import annotations

import threading
from typing import Any, Final, NamedTuple

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest

from foldgate.model.activity import ActivityEvent, ActivityRecord

__all__ = ["OVERFLOW", "PrometheusRecorder"]

LABELS: Final = ("tenant", "server", "outcome")
# Where label sets past the bound go (server names come from tenant configs: a bound, not a trust).
OVERFLOW: Final = "_other"
_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class _Series(NamedTuple):
    """One label set's children of each metric."""

    calls: Any
    gateway: Any
    upstream: Any
    request_bytes: Any
    response_bytes: Any


class PrometheusRecorder:
    """Counts calls, their gateway and upstream time and their bytes; :meth:`render` exposes them."""

    def __init__(self, *, max_series: int = 2_000) -> None:
        self.registry = CollectorRegistry()
        self.max_series = max_series
        # Each label set's children, looked up once: labels() takes a lock and builds a key per call.
        self._series: dict[tuple[str, str, str], _Series] = {}
        self._lock = threading.Lock()
        reg = self.registry
        self.calls = Counter(
            "foldgate_calls", "Requests that did work, by how they ended.", LABELS, registry=reg
        )
        self.gateway_seconds = Histogram(
            "foldgate_gateway_duration_seconds",
            "Time foldgate spent on a request, upstream included.",
            LABELS,
            buckets=_BUCKETS,
            registry=reg,
        )
        self.upstream_seconds = Histogram(
            "foldgate_upstream_duration_seconds",
            "Time a request waited for its upstream (requests that called one).",
            LABELS,
            buckets=_BUCKETS,
            registry=reg,
        )
        self.request_bytes = Counter(
            "foldgate_request_bytes", "Request bytes received.", LABELS, registry=reg
        )
        self.response_bytes = Counter("foldgate_response_bytes", "Response bytes sent.", LABELS, registry=reg)
        self._metrics = (
            self.calls, self.gateway_seconds, self.upstream_seconds, self.request_bytes, self.response_bytes,
        )  # fmt: skip

    def _series_of(self, event: ActivityEvent) -> _Series:
        key = (event.tenant, event.server or "-", event.outcome)
        series = self._series.get(key)
        if series is not None:
            return series
        with self._lock:
            if key not in self._series:
                if len(self._series) >= self.max_series:
                    key = (OVERFLOW, OVERFLOW, event.outcome)
                    if key in self._series:
                        return self._series[key]
                self._series[key] = _Series(*(m.labels(*key) for m in self._metrics))
            return self._series[key]

    def record(self, event: ActivityRecord) -> None:
        """Add a call event to the metrics (operator events are not metrics)."""
        if not isinstance(event, ActivityEvent):
            return
        series = self._series_of(event)
        series.calls.inc()
        series.gateway.observe(max(0.0, event.gateway_ms) / 1000)
        if event.upstream_ms is not None:
            series.upstream.observe(max(0.0, event.upstream_ms) / 1000)
        if event.request_bytes > 0:
            series.request_bytes.inc(event.request_bytes)
        if event.response_bytes > 0:
            series.response_bytes.inc(event.response_bytes)

    def render(self) -> tuple[bytes, str]:
        """The exposition text and its content type."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
