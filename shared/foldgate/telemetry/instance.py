"""The serving instance's own figures: its cache, its quota leasing and its dropped activity events.

``/api/v1/status`` describes only the instance that answers it (AdminFunction's in the cloud). The
McpFunction and CodeFunction instances, whose caches and quota slices ``FOLDGATE_CACHE_MB`` and the
tenants' ``limits:`` tune, report here instead:

* in the cloud as CloudWatch EMF (:meth:`InstanceMetrics.emf`, printed by the Lambda handler at most
  once a minute per instance; counters as the change since the instance's previous report, so a
  CloudWatch Sum over a period is the fleet's total), with only the ``service`` dimension and, for
  evictions by kind, ``kind`` (the cache's shelves: a fixed set named in code, never a tenant's);
* locally on ``/metrics`` (:class:`InstanceCollector`, read at scrape time, cumulative).

Figures (:func:`read_figures`): gauges ``CacheBytes``, ``CacheEntries``, ``CacheBudgetBytes``,
``CacheHitRate`` (percent); counters ``CacheHits``, ``CacheMisses``, ``CacheEvictions`` (and per kind),
``QuotaLeases`` (store writes: each lease is one conditional update), ``QuotaTokens``,
``QuotaRefused``, ``QuotaFailOpen``, ``ActivityDropped`` (events the recorder lost: a full buffer, a
failed batch, after close) and ``MetricsDropped`` (call-metric groups past the EMF bound).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["COUNTERS", "GAUGES", "Figures", "InstanceCollector", "InstanceMetrics", "read_figures"]

log = logging.getLogger(__name__)

GAUGES: Final = ("CacheBytes", "CacheEntries", "CacheBudgetBytes", "CacheHitRate")
COUNTERS: Final = (
    "CacheHits",
    "CacheMisses",
    "CacheEvictions",
    "QuotaLeases",
    "QuotaTokens",
    "QuotaRefused",
    "QuotaFailOpen",
    "ActivityDropped",
    "MetricsDropped",
)
# At most this many eviction kinds are reported (the cache's shelves are a handful; a bound all the same).
_MAX_KINDS: Final = 20
# The cloud reports at most this often per instance (a log line per minute, not per invocation).
REPORT_EVERY_S: Final = 60.0


@dataclass(frozen=True)
class Figures:
    """One reading: gauges and cumulative counters by name, and evictions per cache kind."""

    gauges: dict[str, float]
    counters: dict[str, float]
    evictions: dict[str, float] = field(default_factory=dict)


def read_figures(
    cache: Mapping[str, Any] | None,
    quotas: Mapping[str, int] | None,
    recorder: Mapping[str, int] | None,
    metrics_dropped: int = 0,
) -> Figures:
    """The figures from the instance cache's ``stats()``, the quotas' ``stats()`` and the activity
    recorder's counts (each None when the instance has none)."""
    cache, quotas, recorder = cache or {}, quotas or {}, recorder or {}

    def num(source: Mapping[str, Any], key: str) -> float:
        value = source.get(key, 0)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0

    gauges = {
        "CacheBytes": num(cache, "bytes"),
        "CacheEntries": num(cache, "entries"),
        "CacheBudgetBytes": num(cache, "budget_bytes"),
        "CacheHitRate": round(num(cache, "hit_rate") * 100, 2),
    }
    counters = {
        "CacheHits": num(cache, "hits"),
        "CacheMisses": num(cache, "misses"),
        "CacheEvictions": num(cache, "evictions"),
        "QuotaLeases": num(quotas, "leases"),
        "QuotaTokens": num(quotas, "tokens"),
        "QuotaRefused": num(quotas, "refused"),
        "QuotaFailOpen": num(quotas, "fail_open"),
        "ActivityDropped": sum(num(recorder, k) for k in ("dropped_full", "dropped_store", "dropped_closed")),
        "MetricsDropped": float(metrics_dropped),
    }
    kinds = cache.get("kinds")
    evictions: dict[str, float] = {}
    if isinstance(kinds, Mapping):
        for kind, numbers in sorted(kinds.items())[:_MAX_KINDS]:
            if isinstance(kind, str) and isinstance(numbers, Mapping):
                evictions[kind[:40]] = num(numbers, "evictions")
    return Figures(gauges, counters, evictions)


class InstanceMetrics:
    """Prints the instance's figures as EMF when a report is due: counters as the change since the
    previous report, gauges as they are now."""

    def __init__(
        self,
        read: Callable[[], Figures],
        *,
        every_s: float = REPORT_EVERY_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.read = read
        self.every_s = every_s
        self._clock = clock
        self._last: float | None = None
        self._previous = Figures({}, {}, {})

    def due(self) -> bool:
        """Whether a report is due (the instance's first, or ``every_s`` after the previous one)."""
        return self._last is None or self._clock() - self._last >= self.every_s

    def emf(self, namespace: str, service: str) -> None:
        """Print one report when due; never raises (metrics must not fail an invocation)."""
        if not self.due():
            return
        self._last = self._clock()
        try:
            now = self.read()
            self._print(now, namespace, service)
            self._previous = now
        except Exception:
            log.warning("instance metrics were not printed", exc_info=True)

    def _print(self, now: Figures, namespace: str, service: str) -> None:
        # Powertools Metrics loads with the first report, not at init (as the call metrics do).
        from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

        units = {"CacheBytes": MetricUnit.Bytes, "CacheBudgetBytes": MetricUnit.Bytes}
        metrics = EphemeralMetrics(namespace=namespace, service=service)
        for name, value in now.gauges.items():
            unit = MetricUnit.Percent if name == "CacheHitRate" else units.get(name, MetricUnit.Count)
            metrics.add_metric(name, unit, value)
        for name, value in now.counters.items():
            metrics.add_metric(
                name, MetricUnit.Count, max(0.0, value - self._previous.counters.get(name, 0.0))
            )
        metrics.flush_metrics()
        for kind, value in now.evictions.items():
            by_kind = EphemeralMetrics(namespace=namespace, service=service)
            by_kind.add_dimension("kind", kind)
            delta = max(0.0, value - self._previous.evictions.get(kind, 0.0))
            by_kind.add_metric("CacheEvictions", MetricUnit.Count, delta)
            by_kind.flush_metrics()


class InstanceCollector:
    """A Prometheus collector of the instance's figures, read at scrape time (``foldgate_instance_*``:
    gauges as they are, counters cumulative since start, evictions labelled by kind)."""

    def __init__(self, read: Callable[[], Figures]) -> None:
        self.read = read

    def collect(self) -> Iterator[Any]:
        """The metric families (prometheus_client's collector protocol)."""
        # prometheus_client is loaded with the local gateway's /metrics already.
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        try:
            now = self.read()
        except Exception:  # a scrape must not fail on one source
            log.warning("instance figures unavailable", exc_info=True)
            return
        for name, value in now.gauges.items():
            yield GaugeMetricFamily(
                f"foldgate_instance_{_snake(name)}", f"{name} of this instance.", value=value
            )
        for name, value in now.counters.items():
            if name == "CacheEvictions":
                family = CounterMetricFamily(
                    "foldgate_instance_cache_evictions", "Cache evictions by kind.", labels=["kind"]
                )
                for kind, count in now.evictions.items():
                    family.add_metric([kind], count)
                yield family
                continue
            yield CounterMetricFamily(
                f"foldgate_instance_{_snake(name)}", f"{name} since start.", value=value
            )


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))
