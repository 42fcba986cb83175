"""The cost of one tenant for a month on the cloud stack, from counted operations and the public price
list (for ``foldgate bench scale-storage``; the method is in docs/scale.md).

Measured inputs (per event, counted by :mod:`foldgate.dev.bench.ddb_units` on moto_server): the read
and write request units of a schedule run, a freshness run, a publish of a changed catalog, a serving
instance's catalog load, pointer check and config read, and the bytes a tenant keeps in the table.
Stated assumptions (CLI options): requests per tenant, tools per tenant, reindex and freshness
intervals, warm instances per tenant, request and index durations, changes per month, secrets per
tenant. Prices: us-east-1 list prices, each with its source and the date it was read.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Final

__all__ = ["PRICES", "CostAssumptions", "parameter_store_at", "secrets_in_table", "tenant_month"]

MONTH_S: Final = 30 * 24 * 3600

# us-east-1 list prices, read 2026-12-01.
PRICES: Final[dict[str, dict[str, Any]]] = {
    "lambda_gb_s": {
        "usd": 0.0000133334,
        "per": "GB-second, arm64",
        "source": "aws.amazon.com/lambda/pricing",
    },
    "lambda_request": {"usd": 0.20 / 1e6, "per": "request", "source": "aws.amazon.com/lambda/pricing"},
    "ddb_rru": {
        "usd": 0.125 / 1e6,
        "per": "read request unit, on-demand",
        "source": "aws.amazon.com/dynamodb/pricing/on-demand",
    },
    "ddb_wru": {
        "usd": 0.625 / 1e6,
        "per": "write request unit, on-demand",
        "source": "aws.amazon.com/dynamodb/pricing/on-demand",
    },
    "ddb_gb_month": {
        "usd": 0.25,
        "per": "GB-month, Standard table class (first 25 GB per account free, not deducted here)",
        "source": "aws.amazon.com/dynamodb/pricing/on-demand",
    },
    "sqs_request": {
        "usd": 0.40 / 1e6,
        "per": "standard-queue request (64 KB chunk; first 1M per month free, not deducted)",
        "source": "aws.amazon.com/sqs/pricing",
    },
    "ssm_api": {
        "usd": 0.05 / 10_000,
        "per": "API interaction with an advanced parameter, or any with higher throughput (else free)",
        "source": "aws.amazon.com/systems-manager/pricing",
    },
    "kms_request": {
        "usd": 0.03 / 10_000,
        "per": "KMS request (GenerateDataKey, Decrypt), symmetric key; the stack's GrantKey is paid already",
        "source": "aws.amazon.com/kms/pricing",
    },
    "ssm_advanced_param": {
        "usd": 0.05,
        "per": "advanced parameter-month",
        "source": "aws.amazon.com/systems-manager/pricing",
    },
}


@dataclass(frozen=True)
class CostAssumptions:
    """What the cost model assumes (each a CLI option of the bench)."""

    requests_per_tenant: int = 10_000  # MCP requests per tenant per month
    tools_per_tenant: int = 100
    servers_per_tenant: int = 20
    reindex_minutes: float = 60.0  # the template's ScheduleExpression default, rate(1 hour)
    freshness_minutes: float = 5.0  # the template's FreshnessSchedule default
    warm_instances: int = 2  # McpFunction instances serving the tenant at once
    request_ms: float = 30.0  # billed duration of a warm MCP request
    mcp_memory_mb: int = 1024
    index_s_per_tenant: float = 3.0  # one tenant's schedule run (listing its upstreams)
    freshness_s_per_tenant: float = 1.0  # one tenant's freshness check: ceil(20 / 8) x 0.3 s + 0.1 s
    indexer_memory_mb: int = 1024
    changes_per_month: int = 8  # published catalog versions (upstream or config changes)
    secrets_per_tenant: int = 5
    # Tenants in the account and region: the standard tier's 10,000 parameters are shared among them,
    # secrets beyond a tenant's share are advanced parameters.
    tenants: int = 10_000
    config_cache_s: float = 30.0  # FOLDGATE_CONFIG_CACHE_SECONDS
    catalog_cache_s: float = 10.0  # FOLDGATE_CATALOG_CACHE_SECONDS
    token_cache_s: float = 30.0  # agent-token cache of the authority
    secrets_cache_s: float = 300.0  # FOLDGATE_SECRETS_CACHE_SECONDS


def _refreshes(a: CostAssumptions, ttl_s: float) -> float:
    """Reads of one cached item per month: one per TTL per warm instance, never more than requests."""
    return min(float(a.requests_per_tenant), a.warm_instances * MONTH_S / ttl_s)


def _usd(key: str, quantity: float) -> float:
    return float(PRICES[key]["usd"]) * quantity


def tenant_month(units: dict[str, Any], a: CostAssumptions) -> dict[str, Any]:
    """Line items of one tenant-month. ``units`` holds the measured per-event units, scaled to
    ``a.tools_per_tenant``: ``schedule_rru``, ``freshness_rru``, ``publish_rru``, ``publish_wru``,
    ``load_rru``, ``pointer_rru``, ``config_rru``, ``token_rru`` and ``storage_bytes``."""
    minutes = MONTH_S / 60
    schedule_runs = minutes / a.reindex_minutes
    freshness_runs = minutes / a.freshness_minutes
    mcp_gb_s = a.requests_per_tenant * a.request_ms / 1000 * a.mcp_memory_mb / 1024
    idx_gb_s = (
        (schedule_runs * a.index_s_per_tenant + freshness_runs * a.freshness_s_per_tenant)
        * a.indexer_memory_mb
        / 1024
    )
    # Fan-out: one invocation per SQS batch of 10 tenants; per batch one SendMessageBatch, one receive
    # and one DeleteMessageBatch.
    invocations = (schedule_runs + freshness_runs) / 10
    sqs_requests = (schedule_runs + freshness_runs) * 3 / 10
    serve_rru = (
        _refreshes(a, a.catalog_cache_s) * units["pointer_rru"]
        + _refreshes(a, a.token_cache_s) * units["token_rru"]
        + _refreshes(a, a.config_cache_s) * units["config_rru"]
        + a.changes_per_month * a.warm_instances * units["load_rru"]
    )
    index_rru = (
        schedule_runs * units["schedule_rru"]
        + freshness_runs * units["freshness_rru"]
        + a.changes_per_month * units["publish_rru"]
    )
    wru = a.changes_per_month * units["publish_wru"]
    ssm_calls = _refreshes(a, a.secrets_cache_s) * a.secrets_per_tenant
    # The standard tier's 10,000 parameters shared by every tenant (the stack's 2 secrets aside).
    standard_share = (10_000 - 2) / max(1, a.tenants)
    advanced = max(0.0, a.secrets_per_tenant - standard_share)
    advanced_calls = ssm_calls * advanced / a.secrets_per_tenant if a.secrets_per_tenant else 0.0
    gb = units["storage_bytes"] / 1024**3
    ssm_secrets = _usd("ssm_advanced_param", advanced) + _usd("ssm_api", advanced_calls)
    table_secrets = secrets_in_table(a, ssm_calls)
    items = {
        "lambda_mcp": _usd("lambda_gb_s", mcp_gb_s) + _usd("lambda_request", a.requests_per_tenant),
        "lambda_indexer": _usd("lambda_gb_s", idx_gb_s) + _usd("lambda_request", invocations),
        "dynamodb_reads_serving": _usd("ddb_rru", serve_rru),
        "dynamodb_reads_indexing": _usd("ddb_rru", index_rru),
        "dynamodb_writes": _usd("ddb_wru", wru),
        "dynamodb_storage": _usd("ddb_gb_month", gb),
        "sqs": _usd("sqs_request", sqs_requests),
        # Standard parameters at standard throughput cost nothing; advanced ones a month each, and
        # their API interactions.
        "ssm_secrets": ssm_secrets,
    }
    total = sum(items.values())
    return {
        "usd": {k: round(v, 6) for k, v in items.items()},
        "total_usd": round(total, 4),
        # The template's SecretStore, side by side: the total above is with "ssm" (its default).
        "secret_store": {
            "ssm_usd": round(ssm_secrets, 6),
            "table_usd": round(table_secrets, 6),
            "total_usd_with_ssm": round(total, 4),
            "total_usd_with_table": round(total - ssm_secrets + table_secrets, 4),
        },
        "quantities": {
            "mcp_gb_s": round(mcp_gb_s, 1),
            "indexer_gb_s": round(idx_gb_s, 1),
            "invocations_indexer": round(invocations),
            "rru_serving": round(serve_rru),
            "rru_indexing": round(index_rru),
            "wru": round(wru),
            "storage_bytes": units["storage_bytes"],
            "sqs_requests": round(sqs_requests),
            "ssm_get_parameter": round(ssm_calls),
            "ssm_advanced_secrets": round(advanced, 2),
            "ssm_if_higher_throughput_usd": round(_usd("ssm_api", ssm_calls), 4),
        },
        "assumptions": asdict(a),
    }


# A sealed secret's item: its key, a KMS-wrapped data key (~180 bytes), nonce, tag and the value.
_SEALED_ITEM_BYTES: Final = 600


def secrets_in_table(a: CostAssumptions, reads: float) -> float:
    """A tenant's secrets sealed in the table for a month (``SecretStore: table``): ``reads`` opens
    (each a strongly consistent GetItem, 1 RRU, and a KMS Decrypt: the data key is cached as long as
    the value), one rotation of each secret (a GenerateDataKey and a 1 WRU PutItem), and storage."""
    writes = float(a.secrets_per_tenant)
    gb = a.secrets_per_tenant * _SEALED_ITEM_BYTES / 1024**3
    return (
        _usd("ddb_rru", reads)
        + _usd("kms_request", reads + writes)
        + _usd("ddb_wru", writes)
        + _usd("ddb_gb_month", gb)
    )


def parameter_store_at(tenants: int, servers: int, secrets: int, doc_bytes: int) -> dict[str, Any]:
    """What keeping tenant configs in Parameter Store would take at this scale (the decision's numbers)."""
    layout = tenants * (1 + servers + secrets)
    packed = tenants * (1 + secrets)
    return {
        "tenants": tenants,
        "parameters_one_per_server": layout,
        "parameters_one_document_per_tenant": packed,
        "standard_limit": 10_000,
        "advanced_limit": 100_000,
        "document_bytes": doc_bytes,
        "document_fits_standard_4kb": doc_bytes <= 4096,
        "document_fits_advanced_8kb": doc_bytes <= 8192,
        "advanced_documents_usd_month": round(tenants * float(PRICES["ssm_advanced_param"]["usd"]), 2),
        "describe_calls_to_list": math.ceil(layout / 50),
    }
