"""The fleet page's per-server use over the last 24 hours: calls, error rate and p95 gateway latency, in
total and per hour (the sparklines), from the activity summary the admin API serves too
(:func:`foldgate.serve.activity_summary.summarize`, so both count errors alike: every outcome but ok).

Reading is bounded: at most ``max_events`` of the newest events are read; when a busy tenant had more,
the page says its figures cover only the newest ones. Reading a day is not free (10,000 events took
~0.5-1 s to read and decode from SQLite here), so each tenant's figures are kept a minute per process:
the fleet page polled or reloaded reads the log once a minute, not on every view."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from foldgate.edge.console.sparkline import sparkline_svg
from foldgate.errors import FoldgateError
from foldgate.serve.activity_summary import ActivitySummary, CallStats, summarize
from foldgate.store.activity.base import ActivityStore

__all__ = ["HOURS", "MAX_EVENTS", "UsageCache", "fleet_usage", "usage_rows"]

HOURS = 24
# A busy day of one tenant, read in about a second at worst (see the module's doc).
MAX_EVENTS = 10_000
# A figure with no calls behind it.
_NONE = "\u2013"


def fleet_usage(
    store: ActivityStore | None, tenant: str, now: float, max_events: int = MAX_EVENTS
) -> dict[str, Any]:
    """The tenant's last 24 hours in hourly slices (``summary``), or why there is none: no activity
    log in this deployment (``available`` false) or a store that cannot be read (``error``)."""
    if store is None:
        return {"available": False, "summary": None, "error": None}
    try:
        found = summarize(store, tenant, "24h", now=now, buckets=HOURS, max_events=max_events)
    except FoldgateError as exc:
        return {"available": True, "summary": None, "error": exc.message}
    return {"available": True, "summary": found, "error": None}


@dataclass
class UsageCache:
    """Each tenant's :func:`fleet_usage`, kept ``ttl_s`` seconds (a failed read is not kept: the next
    view tries again), for at most ``max_tenants`` tenants (the oldest kept is dropped first)."""

    store: ActivityStore | None
    ttl_s: float = 60.0
    max_tenants: int = 256
    clock: Callable[[], float] = time.time
    _kept: dict[str, dict[str, Any]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, tenant: str) -> dict[str, Any]:
        """The tenant's last 24 hours as of at most ``ttl_s`` ago (``as_of``: when they were read)."""
        now = self.clock()
        with self._lock:
            kept = self._kept.get(tenant)
        if kept is not None and now - kept["as_of"] < self.ttl_s:
            return kept
        # Read outside the lock: two views of a cold tenant may both read, neither waits for the other.
        # "rows": the rendered rows by page of servers, drawn once per read (see rows()).
        usage = {**fleet_usage(self.store, tenant, now), "as_of": now, "rows": {}}
        if usage["error"] is None:
            with self._lock:
                self._kept.pop(tenant, None)
                while len(self._kept) >= self.max_tenants:
                    self._kept.pop(next(iter(self._kept)))
                self._kept[tenant] = usage
        return usage

    def rows(self, usage: dict[str, Any], servers: Sequence[str]) -> list[dict[str, Any]]:
        """:func:`usage_rows` of ``usage`` (one :meth:`get` answered) for a page's ``servers``, drawn
        once per read and page (the sparklines are most of a warm fleet page's time otherwise)."""
        key = tuple(servers)
        drawn: dict[tuple[str, ...], list[dict[str, Any]]] = usage["rows"]
        found = drawn.get(key)
        if found is None:
            found = usage_rows(usage["summary"], servers)
            with self._lock:
                # A tenant's fleet has a few pages; a config edited under a kept read adds one more.
                if len(drawn) >= 64:
                    drawn.clear()
                drawn[key] = found
        return found


def _rate(stats: CallStats) -> str:
    return f"{stats.error_rate * 100:.1f}%" if stats.calls else _NONE


def _ms(value: float | None) -> str:
    if value is None:
        return _NONE
    return f"{value:,.0f} ms" if value >= 10 else f"{value:.1f} ms"


def usage_rows(summary: ActivitySummary | None, servers: Sequence[str]) -> list[dict[str, Any]]:
    """The fleet page's rows for ``servers`` (in that order): each 24-hour figure as text and its hourly
    sparkline as an SVG string (escaped by :func:`sparkline_svg`, so the template may insert it). An
    hour without calls is a gap in the error-rate and latency lines, and zero in the calls line."""
    rows = []
    for name in servers:
        total = summary.servers.get(name) if summary is not None else None
        hours = summary.series.get(name, []) if summary is not None else []
        calls = [float(h.calls) for h in hours] or [0.0] * HOURS
        rates = [h.error_rate if h.calls else None for h in hours] or [None] * HOURS
        p95 = [h.gateway_p95_ms for h in hours] or [None] * HOURS
        rows.append({
            "name": name,
            "calls": f"{total.calls:,}" if total is not None else "0",
            "error_rate": _rate(total) if total is not None else _NONE,
            "p95": _ms(total.gateway_p95_ms) if total is not None else _NONE,
            "calls_svg": sparkline_svg(calls, title=f"{name}: calls per hour, last 24 hours"),
            "errors_svg": sparkline_svg(
                rates, title=f"{name}: error rate per hour, last 24 hours", stroke="#a3261b"
            ),
            "p95_svg": sparkline_svg(
                p95, title=f"{name}: p95 gateway latency per hour, last 24 hours", stroke="#374"
            ),
        })  # fmt: skip
    return rows
