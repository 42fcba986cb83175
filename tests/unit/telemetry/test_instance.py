"""The serving instance's figures: read from the cache, quota and recorder counts; printed as EMF at
most once per interval with counters as deltas; exposed on /metrics cumulative, evictions by kind."""

from __future__ import annotations

import json
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from foldgate.telemetry.instance import InstanceCollector, InstanceMetrics, read_figures

CACHE = {
    "budget_bytes": 1000,
    "bytes": 400,
    "entries": 3,
    "hits": 9,
    "misses": 1,
    "hit_rate": 0.9,
    "evictions": 5,
    "kinds": {"catalog": {"evictions": 2}, "view": {"evictions": 3}},
}


def test_figures_come_from_the_parts_counts() -> None:
    figures = read_figures(
        CACHE,
        {"leases": 4, "tokens": 40, "refused": 2, "fail_open": 1},
        {"dropped_full": 1, "dropped_store": 2, "dropped_closed": 3, "written": 50},
        metrics_dropped=7,
    )
    assert figures.gauges == {
        "CacheBytes": 400,
        "CacheEntries": 3,
        "CacheBudgetBytes": 1000,
        "CacheHitRate": 90.0,
    }
    assert figures.counters["QuotaLeases"] == 4
    assert figures.counters["QuotaRefused"] == 2
    assert figures.counters["ActivityDropped"] == 6
    assert figures.counters["MetricsDropped"] == 7
    assert figures.evictions == {"catalog": 2, "view": 3}
    # An instance without quotas or a cache reports zeros, not an error.
    assert read_figures(None, None, None).counters["QuotaLeases"] == 0


def _docs(out: str) -> list[dict[str, Any]]:
    """EMF documents, each metric's value as one number (Powertools may print a one-item list)."""
    docs = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return [{k: v[0] if isinstance(v, list) and len(v) == 1 else v for k, v in d.items()} for d in docs]


def test_emf_is_printed_when_due_with_counters_as_deltas(capsys: pytest.CaptureFixture[str]) -> None:
    now = [100.0]
    cache = dict(CACHE)
    metrics = InstanceMetrics(
        lambda: read_figures(cache, {"leases": 4}, None), every_s=60, clock=lambda: now[0]
    )
    metrics.emf("ns", "svc")
    first = _docs(capsys.readouterr().out)
    whole = next(d for d in first if "kind" not in d)
    assert (whole["CacheEvictions"], whole["QuotaLeases"], whole["CacheHitRate"]) == (5.0, 4.0, 90.0)
    assert {d["kind"]: d["CacheEvictions"] for d in first if "kind" in d} == {"catalog": 2.0, "view": 3.0}
    now[0] += 30
    metrics.emf("ns", "svc")
    assert capsys.readouterr().out == ""  # not due yet
    now[0] += 30
    cache["evictions"] = 8
    cache["kinds"] = {"catalog": {"evictions": 2}, "view": {"evictions": 6}}
    metrics.emf("ns", "svc")
    second = _docs(capsys.readouterr().out)
    whole = next(d for d in second if "kind" not in d)
    assert (whole["CacheEvictions"], whole["QuotaLeases"]) == (3.0, 0.0)
    assert {d["kind"]: d["CacheEvictions"] for d in second if "kind" in d} == {"catalog": 0.0, "view": 3.0}


def test_a_failing_reader_prints_nothing_and_raises_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> Any:
        raise RuntimeError("gone")

    InstanceMetrics(broken).emf("ns", "svc")
    assert capsys.readouterr().out == ""


def test_the_collector_exposes_cumulative_figures_and_evictions_by_kind() -> None:
    registry = CollectorRegistry()
    registry.register(InstanceCollector(lambda: read_figures(CACHE, {"refused": 2}, None)))
    text = generate_latest(registry).decode()
    assert "foldgate_instance_cache_bytes 400.0" in text
    assert "foldgate_instance_cache_hit_rate 90.0" in text
    assert 'foldgate_instance_cache_evictions_total{kind="view"} 3.0' in text
    assert "foldgate_instance_quota_refused_total 2.0" in text
