"""The indexer Lambda's metrics of one invocation: the enrichment pass's spend (tools enriched,
failures, deferred tools, tokens in and out) summed over the tenants it indexed, only when one ran."""

from __future__ import annotations

from typing import Any

from foldgate.app.indexer_lambda import _record
from foldgate.index.indexer import IndexReport
from foldgate.index.job import JobResult


class Metrics:
    """Collects add_metric calls the way Powertools' Metrics receives them."""

    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def add_metric(self, name: str, unit: Any, value: float) -> None:
        self.values[name] = value


def report(tenant: str, enrichment: dict[str, Any] | None) -> IndexReport:
    r = IndexReport(tenant, None, True, tools=3)
    r.enrichment = enrichment
    return r


def usage(enriched: int, tokens: int) -> dict[str, Any]:
    return {"enriched": enriched, "failed": 1, "deferred": 2, "tokens_in": tokens, "tokens_out": tokens // 2}


def test_the_enrichment_spend_of_every_tenant_is_summed() -> None:
    metrics = Metrics()
    result = JobResult("schedule", [report("a", usage(3, 100)), report("b", usage(4, 50)), report("c", None)])
    _record(metrics, result, 12.0)
    assert metrics.values["ToolsEnriched"] == 7
    assert metrics.values["EnrichmentFailures"] == 2
    assert metrics.values["EnrichmentDeferred"] == 4
    assert metrics.values["EnrichmentTokensIn"] == 150
    assert metrics.values["EnrichmentTokensOut"] == 75


def test_a_stack_that_does_not_enrich_sends_no_enrichment_metrics() -> None:
    metrics = Metrics()
    _record(metrics, JobResult("schedule", [report("a", None)]), 12.0)
    assert "ToolsEnriched" not in metrics.values
    assert metrics.values["TenantsIndexed"] == 1
