"""The tenant-month cost model: each line scales with the assumption that drives it, cached reads never
exceed the requests that would trigger them, and Parameter Store's limits at 10,000 tenants are what
the decision in docs/scale.md says."""

from __future__ import annotations

import dataclasses

import pytest

from foldgate.dev.bench.cost_model import CostAssumptions, parameter_store_at, tenant_month

UNITS = {
    "schedule_rru": 20.0,
    "freshness_rru": 2.5,
    "publish_rru": 3.0,
    "publish_wru": 120.0,
    "load_rru": 15.0,
    "pointer_rru": 1.0,
    "config_rru": 0.5,
    "token_rru": 1.0,
    "storage_bytes": 80_000,
}


def test_lines_scale_with_their_assumptions() -> None:
    base = CostAssumptions()
    one = tenant_month(UNITS, base)
    more = tenant_month(UNITS, dataclasses.replace(base, requests_per_tenant=base.requests_per_tenant * 2))
    assert more["usd"]["lambda_mcp"] == pytest.approx(2 * one["usd"]["lambda_mcp"], rel=1e-3)
    slower = tenant_month(UNITS, dataclasses.replace(base, reindex_minutes=120, freshness_minutes=10))
    assert slower["quantities"]["sqs_requests"] == pytest.approx(one["quantities"]["sqs_requests"] / 2, abs=1)
    few = tenant_month(UNITS, dataclasses.replace(base, secrets_per_tenant=1))
    assert few["usd"]["ssm_secrets"] < 0.001  # one secret each: (almost) all in the standard tier
    assert one["quantities"]["ssm_advanced_secrets"] == pytest.approx(4.0, abs=0.01)  # 5 each: 4 advanced
    assert one["usd"]["ssm_secrets"] >= 4 * 0.05
    assert one["total_usd"] == pytest.approx(sum(one["usd"].values()), abs=1e-3)


def test_cached_reads_never_exceed_the_requests_that_would_trigger_them() -> None:
    quiet = tenant_month(
        UNITS, dataclasses.replace(CostAssumptions(), requests_per_tenant=10, changes_per_month=0)
    )
    assert quiet["quantities"]["rru_serving"] == 10 * (1.0 + 1.0 + 0.5)


def test_parameter_store_cannot_hold_ten_thousand_tenants_of_twenty_servers() -> None:
    at = parameter_store_at(10_000, 20, 0, 3_000)
    assert at["parameters_one_per_server"] == 210_000
    assert at["parameters_one_per_server"] > at["advanced_limit"]
    assert at["describe_calls_to_list"] == 4_200
    assert at["advanced_documents_usd_month"] == 500.0


def test_both_secret_stores_are_costed_side_by_side() -> None:
    """Sealed in the table, a tenant's five secrets cost reads, KMS requests and bytes, below four
    advanced parameters (KMS Decrypts are most of it); the totals differ by exactly the two secret lines."""
    one = tenant_month(UNITS, CostAssumptions())
    side = one["secret_store"]
    assert side["ssm_usd"] == pytest.approx(one["usd"]["ssm_secrets"], abs=1e-6)
    assert 0 < side["table_usd"] < side["ssm_usd"] / 2
    assert side["total_usd_with_ssm"] == one["total_usd"]
    assert side["total_usd_with_table"] == pytest.approx(
        one["total_usd"] - side["ssm_usd"] + side["table_usd"], abs=1e-3
    )
    # The table's cost grows with the reads (more requests open secrets more often, up to the cache's bound).
    hot = tenant_month(UNITS, dataclasses.replace(CostAssumptions(), requests_per_tenant=15_000))
    assert hot["secret_store"]["table_usd"] > side["table_usd"]
