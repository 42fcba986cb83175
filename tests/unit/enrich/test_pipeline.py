"""The indexer's enrichment pass: reuse by content hash, held tools never sent, provider failures
harmless, per-run caps with continuation over runs, usage reported."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from foldgate.enrich.base import CAP_REACHED, EnrichmentError, EnrichmentRequest, RawEnrichment
from foldgate.enrich.pipeline import EnrichmentCaps, EnrichmentPass, request_for
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.catalog import CatalogVersion
from foldgate.model.deadline import answering_by
from foldgate.model.enrichment import Enrichment
from foldgate.model.tool import Tool
from tests.unit.enrich.fixed import FixedProvider


def tools(*names: str, server: str = "crm") -> list[Tool]:
    return [Tool(server, n, f"{n.replace('_', ' ').capitalize()} in the CRM.") for n in names]


async def run_once(
    provider: FixedProvider,
    listed: list[Tool],
    previous: CatalogVersion | None = None,
    caps: EnrichmentCaps | None = None,
    held: frozenset[str] = frozenset(),
) -> tuple[CatalogVersion, dict[str, object]]:
    found, report = await EnrichmentPass(provider, caps).run(listed, previous, held=held)
    catalog = catalog_from_tools("t", listed, previous=previous, enrichments=found)
    return catalog, report.to_doc()


async def test_every_tool_is_enriched_with_validated_text_keyed_by_its_content_hash() -> None:
    provider = FixedProvider()
    catalog, report = await run_once(provider, tools("find_customer", "merge_customers"))
    e = catalog.by_key["crm:find_customer"].enrichment
    assert e is not None
    assert e.content_hash == catalog.by_key["crm:find_customer"].tool.content_hash
    assert e.source == "fixed:v1"
    assert e.hint == "Use when you need to find customer zorblat."
    assert report["enriched"] == 2
    assert report["tokens_in"] == 20
    assert report["tokens_out"] == 20


async def test_an_unchanged_tool_is_not_sent_again_and_a_changed_one_is() -> None:
    provider = FixedProvider()
    first, _ = await run_once(provider, tools("find_customer", "merge_customers"))
    provider.asked.clear()
    listed = tools("find_customer", "merge_customers")
    listed[1] = replace(listed[1], description="Merge two customer records into one.")
    second, report = await run_once(provider, listed, first)
    assert provider.names == ["merge_customers"]
    assert report["reused"] == 1
    assert report["enriched"] == 1
    assert second.by_key["crm:find_customer"].enrichment == first.by_key["crm:find_customer"].enrichment
    merged = second.by_key["crm:merge_customers"].enrichment
    assert merged is not None
    assert merged.content_hash == listed[1].content_hash


async def test_another_providers_enrichment_is_served_until_this_provider_redoes_it() -> None:
    first, _ = await run_once(FixedProvider("old:model"), tools("find_customer"))
    provider = FixedProvider("new:model")
    capped = EnrichmentCaps(max_tools=0)
    kept, report = await run_once(provider, tools("find_customer"), first, capped)
    assert provider.names == []
    assert report["deferred"] == 1
    old = kept.by_key["crm:find_customer"].enrichment
    assert old is not None
    assert old.source == "old:model"
    redone, _ = await run_once(provider, tools("find_customer"), kept)
    new = redone.by_key["crm:find_customer"].enrichment
    assert new is not None
    assert new.source == "new:model"


async def test_held_tools_are_never_sent_to_the_provider() -> None:
    provider = FixedProvider()
    catalog, report = await run_once(
        provider, tools("find_customer", "export_all"), held=frozenset({"crm:export_all"})
    )
    assert provider.names == ["find_customer"]
    assert catalog.by_key["crm:export_all"].enrichment is None
    assert report["held"] == 1


async def test_a_provider_failure_or_crash_leaves_the_tool_unenriched_and_the_run_succeeds() -> None:
    provider = FixedProvider(fail=frozenset({"merge_customers"}), crash=frozenset({"close_account"}))
    catalog, report = await run_once(provider, tools("find_customer", "merge_customers", "close_account"))
    assert catalog.by_key["crm:find_customer"].enrichment is not None
    assert catalog.by_key["crm:merge_customers"].enrichment is None
    assert catalog.by_key["crm:close_account"].enrichment is None
    assert report["failed"] == 2
    assert report["enriched"] == 1
    assert any("quota exceeded" in e for e in report["errors"])  # type: ignore[attr-defined]


async def test_a_rejected_answer_is_a_failure_not_a_stored_enrichment() -> None:
    def reject(raw: RawEnrichment, request: EnrichmentRequest, *, source: str) -> Enrichment:
        from foldgate.enrich.base import EnrichmentError  # local: only this test rejects

        raise EnrichmentError("instructions to the model")

    provider = FixedProvider()
    found, report = await EnrichmentPass(provider, validator=reject).run(tools("find_customer"), None)
    assert found == {}
    assert report.failed == 1
    assert report.errors == ["crm:find_customer: rejected: instructions to the model"]


async def test_a_validator_that_crashes_rejects_the_answer_and_the_run_goes_on() -> None:
    def broken(raw: RawEnrichment, request: EnrichmentRequest, *, source: str) -> Enrichment:
        if request.name == "a_one":
            raise ValueError("bug")
        return Enrichment(raw.hint, raw.queries, request.content_hash, source)

    found, report = await EnrichmentPass(FixedProvider(), validator=broken).run(tools("a_one", "b_two"), None)
    assert set(found) == {"crm:b_two"}
    assert report.errors == ["crm:a_one: rejected: ValueError"]


async def test_a_tool_cap_defers_the_rest_and_the_next_run_continues_without_redoing_any() -> None:
    provider = FixedProvider()
    listed = tools("a_one", "b_two", "c_three", "d_four", "e_five")
    caps = EnrichmentCaps(max_tools=3, concurrency=2)
    first, report = await run_once(provider, listed, caps=caps)
    assert report["enriched"] == 3
    assert report["deferred"] == 2
    assert report["capped"] == "tools"
    assert sum(1 for t in first.tools if t.enrichment is not None) == 3
    done = set(provider.names)
    provider.asked.clear()
    second, report = await run_once(provider, listed, first, caps)
    assert report["reused"] == 3
    assert report["enriched"] == 2
    assert report["capped"] is None
    assert not done & set(provider.names)
    assert all(t.enrichment is not None for t in second.tools)
    # Enrichment alone changes the fingerprint, so the continuing run is published.
    assert second.fingerprint != first.fingerprint


async def test_a_token_cap_stops_new_calls_once_spent() -> None:
    provider = FixedProvider(tokens=50)
    _, report = await run_once(
        provider, tools("a_one", "b_two", "c_three"), caps=EnrichmentCaps(max_tokens=100, concurrency=1)
    )
    assert report["enriched"] == 1
    assert report["deferred"] == 2
    assert report["capped"] == "tokens"


async def test_a_call_still_running_at_the_wall_time_cap_is_cut_off_and_deferred() -> None:
    provider = FixedProvider(gate=asyncio.Event())  # never answers
    caps = EnrichmentCaps(max_seconds=0.05, concurrency=1)
    catalog, report = await run_once(provider, tools("a_one", "b_two"), caps=caps)
    assert report["capped"] == "seconds"
    assert report["deferred"] == 2
    assert report["failed"] == 0
    assert all(t.enrichment is None for t in catalog.tools)


async def test_the_index_jobs_deadline_bounds_the_pass() -> None:
    provider = FixedProvider(gate=asyncio.Event())
    with answering_by(time.monotonic() + 0.05):
        _, report = await EnrichmentPass(provider).run(tools("a_one"), None)
    assert report.capped == "seconds"
    assert report.deferred == 1


class SlowProvider(FixedProvider):
    """Each call takes 1.5 s of the test's clock."""

    def __init__(self, now: list[float]) -> None:
        super().__init__()
        self.now = now

    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        self.now[0] += 1.5
        return await super().enrich(request)


async def test_tokens_and_wall_time_per_100_tools_are_reported() -> None:
    now = [100.0]
    provider = SlowProvider(now)
    _, report = await EnrichmentPass(provider, clock=lambda: now[0]).run(tools("a_one", "b_two"), None)
    assert report.seconds == 3.0
    assert report.to_doc()["seconds_per_100_tools"] == 150.0
    assert (report.tokens_in, report.tokens_out) == (20, 20)


async def test_neighbours_reach_the_request_and_the_request_is_bounded() -> None:
    provider = FixedProvider()
    listed = [
        Tool("crm", "create_customer", "Add a customer."),
        Tool("crm", "delete_customer", "Remove a customer."),
        Tool(
            "crm", "huge", "d" * 10_000, {"type": "object", "properties": {f"p{i}": {} for i in range(100)}}
        ),
    ]
    await run_once(provider, listed)
    by_name = {r.name: r for r in provider.asked}
    assert [n.name for n in by_name["create_customer"].neighbours] == ["delete_customer"]
    huge = request_for(listed[2])
    assert len(huge.description) == 2000
    assert len(huge.params) == 20


async def test_a_cache_by_content_hash_is_reused_like_a_previous_version() -> None:
    listed = tools("a_one", "b_two")
    cache = {listed[0].content_hash: Enrichment("Use for one.", (), listed[0].content_hash, "fixed:v1")}
    cache["wrong"] = Enrichment("Mismatched key.", (), listed[1].content_hash, "fixed:v1")
    provider = FixedProvider()
    found, report = await EnrichmentPass(provider).run(listed, None, cached=cache)
    assert provider.names == ["b_two"]
    assert found["crm:a_one"].hint == "Use for one."
    assert report.reused == 1


class CapError(EnrichmentError):
    code = CAP_REACHED


class CappedProvider(FixedProvider):
    """Spends its own per-run budget after ``budget`` calls (as Bedrock's token and cost caps do)."""

    def __init__(self, budget: int) -> None:
        super().__init__()
        self.budget = budget

    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        if self.usage.calls >= self.budget:
            raise CapError("cost cap reached: $5.00 of $5.00 this run")
        return await super().enrich(request)


async def test_a_providers_own_cap_defers_the_rest_instead_of_failing_it() -> None:
    provider = CappedProvider(budget=2)
    listed = tools("a_one", "b_two", "c_three", "d_four")
    catalog, report = await run_once(provider, listed, caps=EnrichmentCaps(concurrency=1))
    assert report["enriched"] == 2
    assert report["failed"] == 0
    assert report["deferred"] == 2
    assert report["capped"] == "provider"
    assert sum(t.enrichment is not None for t in catalog.tools) == 2


async def test_each_run_starts_with_the_providers_spending_at_zero() -> None:
    """A warm Lambda keeps its provider: the last run's spending must not count against this one."""
    provider = CappedProvider(budget=1)
    caps = EnrichmentCaps(concurrency=1)
    _, first = await run_once(provider, tools("a_one"), caps=caps)
    _, second = await run_once(provider, tools("b_two"), caps=caps)
    assert (first["enriched"], second["enriched"]) == (1, 1)
