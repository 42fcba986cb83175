"""Call metrics on Lambda: CloudWatch embedded metric format, printed by Powertools Metrics.

A :class:`~foldgate.model.activity.Recorder` that keeps each call event's figures in memory, grouped by
the dimensions tenant, server and outcome (low cardinality: names from the tenant's config and a fixed
set of outcome words), and prints them when the invocation ends (:meth:`EmfRecorder.flush`, which
:meth:`EmfRecorder.log_metrics` calls after the handler as Powertools' own decorator does). Printing is
the whole cost: CloudWatch reads the metrics from the function's log, no API call is made.

Metrics per group: ``Calls`` (Count), ``GatewayMs`` and ``UpstreamMs`` (Milliseconds, one value per
call), ``RequestBytes`` and ``ResponseBytes`` (Bytes).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, TypeVar

from foldgate.model.activity import ActivityEvent, ActivityRecord
from foldgate.telemetry.instance import InstanceMetrics

__all__ = ["EmfRecorder"]

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])
# The most dimension groups one invocation keeps (a code run calling many servers); past it, events are
# dropped and counted in ``dropped``.
_MAX_GROUPS: Final = 100


@dataclass
class _Group:
    calls: int = 0
    gateway_ms: list[float] = field(default_factory=list)
    upstream_ms: list[float] = field(default_factory=list)
    request_bytes: int = 0
    response_bytes: int = 0


class EmfRecorder:
    """Groups call events per (tenant, server, outcome) until :meth:`flush` prints them as EMF."""

    def __init__(self, *, namespace: str = "foldgate", service: str = "mcp") -> None:
        self.namespace = namespace
        self.service = service
        self.dropped = 0
        # The instance's own figures, reported with a flush when due (set by the Lambda handler).
        self.instance: InstanceMetrics | None = None
        self._groups: dict[tuple[str, str, str], _Group] = {}
        self._lock = threading.Lock()

    def record(self, event: ActivityRecord) -> None:
        """Keep a call event's figures for the next flush (operator events are not metrics)."""
        if not isinstance(event, ActivityEvent):
            return
        key = (event.tenant, event.server or "-", event.outcome)
        with self._lock:
            group = self._groups.get(key)
            if group is None:
                if len(self._groups) >= _MAX_GROUPS:
                    self.dropped += 1
                    return
                group = self._groups[key] = _Group()
            group.calls += 1
            group.gateway_ms.append(max(0.0, event.gateway_ms))
            if event.upstream_ms is not None:
                group.upstream_ms.append(max(0.0, event.upstream_ms))
            group.request_bytes += max(0, event.request_bytes)
            group.response_bytes += max(0, event.response_bytes)

    def flush(self) -> None:
        """Print every group kept since the last flush as EMF on stdout (one JSON line per group, more
        when a group holds over 100 values: Powertools splits them); never raises."""
        with self._lock:
            groups, self._groups = self._groups, {}
        if self.instance is not None:
            self.instance.emf(self.namespace, self.service)
        if not groups:
            return
        try:
            self._print(groups)
        except Exception:  # metrics must never fail the invocation that produced them
            log.warning("call metrics were not printed", exc_info=True)

    def _print(self, groups: dict[tuple[str, str, str], _Group]) -> None:
        # Powertools Metrics loads with the first flush that has something to print, not at init.
        from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

        for (tenant, server, outcome), group in groups.items():
            metrics = EphemeralMetrics(namespace=self.namespace, service=self.service)
            metrics.add_dimension("tenant", tenant)
            metrics.add_dimension("server", server)
            metrics.add_dimension("outcome", outcome)
            metrics.add_metric("Calls", MetricUnit.Count, group.calls)
            for value in group.gateway_ms:
                metrics.add_metric("GatewayMs", MetricUnit.Milliseconds, value)
            for value in group.upstream_ms:
                metrics.add_metric("UpstreamMs", MetricUnit.Milliseconds, value)
            metrics.add_metric("RequestBytes", MetricUnit.Bytes, group.request_bytes)
            metrics.add_metric("ResponseBytes", MetricUnit.Bytes, group.response_bytes)
            metrics.flush_metrics()

    def log_metrics(self, handler: F) -> F:
        """``handler`` flushing this recorder when each invocation ends (answered or raised)."""

        @functools.wraps(handler)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            try:
                return handler(*args, **kwargs)
            finally:
                self.flush()

        return wrapped  # type: ignore[return-value]
