"""The fleet page's per-server use over the last 24 hours: calls, error rate and p95 gateway latency, in
total and per hour (the sparklines), computed from the tenant's call events newest first.

Reading is bounded: at most ``max_events`` events are read (a page of the store at a time); when a busy
tenant had more, the figures cover the newest ones and say from when."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from foldgate.edge.console.activity import when
from foldgate.edge.console.sparkline import sparkline_svg
from foldgate.errors import FoldgateError
from foldgate.model.activity import ActivityEvent
from foldgate.store.activity.base import ActivityQuery, ActivityStore

__all__ = [
    "ERRORS",
    "HOURS",
    "ServerUsage",
    "fleet_usage",
    "hourly_usage",
    "p95",
    "recent_calls",
    "usage_rows",
]

HOURS = 24
# A figure with no calls behind it.
_NONE = "\u2013"
# Enough for a day of a busy tenant's calls on a page that renders in well under a second.
MAX_EVENTS = 20_000
_PAGE = 1000
# What counts against the error rate: the call reached its tool and did not end well. Refusals by
# policy (denied, held, needs_consent, rate_limited, not_found, invalid_arguments) are the agent's
# or the operator's doing, not the server's, and are counted as calls only.
ERRORS = frozenset({"tool_error", "upstream_error", "upstream_timeout", "deadline", "internal_error"})


def p95(values: Sequence[float]) -> float | None:
    """The 95th percentile (nearest rank) of ``values``, or None when there are none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(0.95 * len(ordered)) - 1)]


@dataclass
class ServerUsage:
    """One server's calls over the window, in total and per hour (oldest hour first)."""

    calls: int = 0
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    hourly_calls: list[int] = field(default_factory=lambda: [0] * HOURS)
    hourly_errors: list[int] = field(default_factory=lambda: [0] * HOURS)
    hourly_latencies: list[list[float]] = field(default_factory=lambda: [[] for _ in range(HOURS)])

    @property
    def error_rate(self) -> float | None:
        """Errors per call (None with no calls)."""
        return self.errors / self.calls if self.calls else None

    @property
    def p95_ms(self) -> float | None:
        """The window's p95 gateway milliseconds."""
        return p95(self.latencies)

    def hourly_error_rate(self) -> list[float | None]:
        """Each hour's error rate (None: no calls that hour, a gap in the sparkline)."""
        return [e / c if c else None for c, e in zip(self.hourly_calls, self.hourly_errors, strict=True)]

    def hourly_p95(self) -> list[float | None]:
        """Each hour's p95 gateway milliseconds (None: no calls that hour)."""
        return [p95(ms) for ms in self.hourly_latencies]


def hourly_usage(events: Iterable[ActivityEvent], now: float, hours: int = HOURS) -> dict[str, ServerUsage]:
    """Per server, the calls of the ``hours`` before ``now`` in hourly buckets (the last bucket ends at
    ``now``); events outside the window or without a server are left out."""
    start = now - hours * 3600
    usage: dict[str, ServerUsage] = {}
    for event in events:
        if not event.server or not start <= event.at < now:
            continue
        bucket = min(hours - 1, int((event.at - start) // 3600))
        found = usage.get(event.server)
        if found is None:
            found = usage[event.server] = ServerUsage()
        failed = event.outcome in ERRORS
        found.calls += 1
        found.errors += failed
        found.latencies.append(event.gateway_ms)
        found.hourly_calls[bucket] += 1
        found.hourly_errors[bucket] += failed
        found.hourly_latencies[bucket].append(event.gateway_ms)
    return usage


def recent_calls(
    store: ActivityStore, tenant: str, since: float, max_events: int = MAX_EVENTS
) -> tuple[list[ActivityEvent], bool]:
    """The tenant's call events since ``since``, newest first, at most ``max_events``; and whether
    there were more."""
    events: list[ActivityEvent] = []
    cursor: str | None = None
    while True:
        limit = min(_PAGE, max_events - len(events))
        page = store.query(ActivityQuery(tenant=tenant, since=since, cursor=cursor, limit=limit))
        events += [r for r in page.records if isinstance(r, ActivityEvent) and r.tenant == tenant]
        cursor = page.cursor
        if cursor is None:
            return events, False
        if len(events) >= max_events:
            return events, True


def fleet_usage(
    store: ActivityStore | None, tenant: str, now: float, max_events: int = MAX_EVENTS
) -> dict[str, Any]:
    """What the fleet page shows of the last 24 hours: per-server usage, whether the window was cut to
    the newest ``max_events`` (and the oldest time covered), or why it is not available."""
    if store is None:
        return {"available": False, "servers": {}, "error": None, "cut_from": None}
    try:
        events, cut = recent_calls(store, tenant, now - HOURS * 3600, max_events)
    except FoldgateError as exc:
        return {"available": True, "servers": {}, "error": exc.message, "cut_from": None}
    return {
        "available": True,
        "servers": hourly_usage(events, now),
        "error": None,
        "cut_from": when(events[-1].at) if cut and events else None,
    }


def _rate(value: float | None) -> str:
    return _NONE if value is None else f"{value * 100:.1f}%"


def _ms(value: float | None) -> str:
    return _NONE if value is None else f"{value:,.0f} ms" if value >= 10 else f"{value:.1f} ms"


def usage_rows(usage: dict[str, Any], servers: Sequence[str]) -> list[dict[str, Any]]:
    """The fleet page's rows for ``servers`` (in that order): each figure over 24 hours as text and its
    hourly sparkline as an SVG string (escaped by :func:`sparkline_svg`, so the template may insert it)."""
    found: dict[str, ServerUsage] = usage["servers"]
    rows = []
    for name in servers:
        u = found.get(name) or ServerUsage()
        rows.append({
            "name": name,
            "calls": f"{u.calls:,}",
            "error_rate": _rate(u.error_rate),
            "p95": _ms(u.p95_ms),
            "calls_svg": sparkline_svg(u.hourly_calls, title=f"{name}: calls per hour, last 24 hours"),
            "errors_svg": sparkline_svg(
                u.hourly_error_rate(), title=f"{name}: error rate per hour, last 24 hours", stroke="#a3261b"
            ),
            "p95_svg": sparkline_svg(
                u.hourly_p95(), title=f"{name}: p95 gateway latency per hour, last 24 hours", stroke="#374"
            ),
        })  # fmt: skip
    return rows
