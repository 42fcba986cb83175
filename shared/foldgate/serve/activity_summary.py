"""A tenant's recent calls summed up per server and per tool: how many, how many failed, and how long
they took (p50 / p95 of the gateway's and the upstream's milliseconds). The admin API's
``/api/v1/activity/summary`` and the console's pages call :func:`summarize`; :func:`summarize_records`
does the arithmetic on events already read (and, with ``buckets``, per time slice for sparklines).

A call "failed" when its outcome is anything but ``ok``; ``outcomes`` counts each outcome, so a
reader can tell a tool error from a refusal. Percentiles are nearest-rank over the calls in the window
(``upstream_ms`` only over the calls that reached an upstream). At most ``max_events`` of the newest
events are read; ``truncated`` says when the window held more.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Final

from foldgate.errors import InvalidRequestError
from foldgate.model.activity import ActivityEvent
from foldgate.store.activity.base import ActivityQuery, ActivityStore

__all__ = [
    "WINDOWS",
    "ActivitySummary",
    "CallStats",
    "percentile",
    "summarize",
    "summarize_records",
    "window_seconds",
]

WINDOWS: Final = {"1h": 3600, "24h": 86_400, "7d": 604_800}
MAX_EVENTS: Final = 100_000
_PAGE: Final = 1000


def window_seconds(window: str) -> int:
    """The length of a named window; InvalidRequestError naming the choices otherwise."""
    try:
        return WINDOWS[window]
    except KeyError:
        raise InvalidRequestError(f"window: must be one of {', '.join(WINDOWS)}") from None


def percentile(values: list[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of ``values``; None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


@dataclass(frozen=True, slots=True)
class CallStats:
    """Calls of one server, one tool or one time slice."""

    calls: int
    errors: int
    error_rate: float
    gateway_p50_ms: float | None
    gateway_p95_ms: float | None
    upstream_p50_ms: float | None
    upstream_p95_ms: float | None
    outcomes: dict[str, int]


@dataclass(frozen=True, slots=True)
class ActivitySummary:
    """A tenant's calls in ``[since, until)``: overall, per server, per ``(server, tool)`` and, when
    asked, per server and time slice (``series[server]`` oldest slice first)."""

    tenant: str
    window: str
    since: float
    until: float
    total: CallStats
    servers: dict[str, CallStats]
    tools: dict[tuple[str, str], CallStats]
    series: dict[str, list[CallStats]] = field(default_factory=dict)
    truncated: bool = False

    def to_doc(self) -> dict[str, object]:
        """As JSON: tools as a list of rows with their server and tool names."""
        return {
            "tenant": self.tenant,
            "window": self.window,
            "since": self.since,
            "until": self.until,
            "truncated": self.truncated,
            "total": _doc(self.total),
            "servers": {name: _doc(s) for name, s in sorted(self.servers.items())},
            "tools": [
                {"server": server, "tool": tool, **_doc(s)}
                for (server, tool), s in sorted(self.tools.items())
            ],
            **(
                {"series": {k: [_doc(s) for s in v] for k, v in sorted(self.series.items())}}
                if self.series
                else {}
            ),
        }


def _doc(stats: CallStats) -> dict[str, object]:
    return {
        "calls": stats.calls,
        "errors": stats.errors,
        "error_rate": stats.error_rate,
        "gateway_ms": {"p50": stats.gateway_p50_ms, "p95": stats.gateway_p95_ms},
        "upstream_ms": {"p50": stats.upstream_p50_ms, "p95": stats.upstream_p95_ms},
        "outcomes": dict(sorted(stats.outcomes.items())),
    }


def _stats(events: list[ActivityEvent]) -> CallStats:
    outcomes: Counter[str] = Counter(str(e.outcome) for e in events)
    errors = len(events) - outcomes.get("ok", 0)
    gateway = [e.gateway_ms for e in events]
    upstream = [e.upstream_ms for e in events if e.upstream_ms is not None]
    return CallStats(
        calls=len(events),
        errors=errors,
        error_rate=errors / len(events) if events else 0.0,
        gateway_p50_ms=percentile(gateway, 50),
        gateway_p95_ms=percentile(gateway, 95),
        upstream_p50_ms=percentile(upstream, 50),
        upstream_p95_ms=percentile(upstream, 95),
        outcomes=dict(outcomes),
    )


def summarize_records(
    tenant: str,
    records: Iterable[ActivityEvent],
    *,
    window: str,
    until: float,
    buckets: int = 0,
    truncated: bool = False,
) -> ActivitySummary:
    """Sum up call events of ``tenant`` in the window ending at ``until`` (others are ignored);
    ``buckets`` > 0 adds that many equal time slices per server."""
    since = until - window_seconds(window)
    events = [
        r for r in records if isinstance(r, ActivityEvent) and r.tenant == tenant and since <= r.at < until
    ]
    by_server: dict[str, list[ActivityEvent]] = {}
    by_tool: dict[tuple[str, str], list[ActivityEvent]] = {}
    for e in events:
        by_server.setdefault(e.server, []).append(e)
        by_tool.setdefault((e.server, e.tool), []).append(e)
    series: dict[str, list[CallStats]] = {}
    if buckets > 0:
        width = (until - since) / buckets
        for server, calls in by_server.items():
            slices: list[list[ActivityEvent]] = [[] for _ in range(buckets)]
            for e in calls:
                slices[min(buckets - 1, int((e.at - since) / width))].append(e)
            series[server] = [_stats(s) for s in slices]
    return ActivitySummary(
        tenant=tenant,
        window=window,
        since=since,
        until=until,
        total=_stats(events),
        servers={k: _stats(v) for k, v in by_server.items()},
        tools={k: _stats(v) for k, v in by_tool.items()},
        series=series,
        truncated=truncated,
    )


def summarize(
    store: ActivityStore,
    tenant: str,
    window: str = "24h",
    *,
    now: float | None = None,
    buckets: int = 0,
    max_events: int = MAX_EVENTS,
) -> ActivitySummary:
    """Read the tenant's calls of the window from ``store`` (newest first, at most ``max_events``) and
    sum them up (see :func:`summarize_records`). Raises StoreError when the store fails."""
    until = time.time() if now is None else now
    query = ActivityQuery(tenant, since=until - window_seconds(window), until=until, limit=_PAGE)
    events: list[ActivityEvent] = []
    truncated = False
    while True:
        page = store.query(query)
        events.extend(r for r in page.records if isinstance(r, ActivityEvent))
        if len(events) >= max_events:
            truncated = page.cursor is not None or len(events) > max_events
            del events[max_events:]
            break
        if page.cursor is None:
            break
        query = replace(query, cursor=page.cursor)
    return summarize_records(tenant, events, window=window, until=until, buckets=buckets, truncated=truncated)
