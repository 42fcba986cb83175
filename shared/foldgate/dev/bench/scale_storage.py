"""``foldgate bench scale-storage``: what 10,000 tenants keep in the table and cost, on moto_server.

Three parts (method and figures in docs/scale.md):

* **bytes**: catalogs from ``../shared/corpora`` (a few sizes; skipped when absent) indexed through the
  real indexer, approval store and ``table`` config source into the template's table, upstream
  listings served in-process from the corpus (how a listing arrives changes no DynamoDB operation).
  Every item a tenant keeps is sized by DynamoDB's rules, per tenant and per tool, and every call of
  a first index, an unchanged schedule run, a changed publish, a freshness check and a serving
  instance's reads is counted in request units (:mod:`foldgate.dev.bench.ddb_units`);
* **listing**: calls to list every tenant, Parameter Store (DescribeParameters) against the table's
  tenant registry (Query), at the issue's 1,420 parameters and at 200,000 (10,000 tenants of 20
  servers): Parameter Store is measured at 1,420 and computed from its page size at 200,000 (it cannot
  hold 200,000 parameters in one account and region); the registry is measured at both;
* **cost**: a tenant-month from the counted units and the price list, under stated assumptions
  (:mod:`foldgate.dev.bench.cost_model`).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
import time
import uuid
from pathlib import Path
from typing import Any

from foldgate.config.ssm import SsmConfigSource
from foldgate.config.table import TableConfigSource
from foldgate.config.tenant import ServerConfig
from foldgate.dev.bench.cost_model import CostAssumptions, parameter_store_at, tenant_month
from foldgate.dev.bench.ddb_units import STORAGE_OVERHEAD, CapacityMeter, item_bytes
from foldgate.dev.bench.moto import create_table_from_template, moto_server
from foldgate.dev.bench.serve import safe_server_names
from foldgate.dev.corpus import load_catalog_rows
from foldgate.index.indexer import Indexer
from foldgate.index.job import IndexJob, IndexRequest
from foldgate.model.jsonutil import canonical
from foldgate.store.approvals.dynamodb import DynamoApprovalStore
from foldgate.store.catalog.dynamodb import DynamoStore
from foldgate.store.configs.base import revision_of
from foldgate.store.configs.dynamodb import DynamoTenantConfigStore, registry_item
from foldgate.store.connections import dynamodb_client, paginate
from foldgate.upstream.client import Listing, UpstreamClient
from foldgate.upstream.offerings import Offerings

__all__ = ["CORPORA", "format_scale_storage_report", "run_scale_storage_bench", "sample_config"]

PREFIX = "/foldgate"
# (label, path under the corpora folder), smallest first.
CORPORA = (
    ("mcpproxy corpus_v2", "mcpproxy/corpus_v2.tools.json"),
    ("mcptoolbench-pp", "mcptoolbench-pp/tools.jsonl"),
    ("github-mcp-server", "github-mcp-server/tools.jsonl"),
    ("livemcpbench", "livemcpbench/tools.jsonl"),
)
_PAGE_BYTES = 1024 * 1024  # a Query page reads at most 1 MB


class _CorpusUpstream(UpstreamClient):
    """Lists each server's recorded tools in-process; no prompts or resources."""

    def __init__(self, rows: dict[str, list[dict[str, Any]]]) -> None:
        super().__init__()
        self.rows = rows

    async def list_tools(self, server: ServerConfig) -> Listing:
        return Listing(tools=[dict(r) for r in self.rows.get(server.name, [])])

    async def list_offerings(self, server: ServerConfig) -> Offerings:
        return Offerings()


def sample_config(servers: int) -> dict[str, Any]:
    """A tenant document of ``servers`` servers as operators write them (secret header, tool loading,
    a timeout, one per-tool override on every other server)."""
    out = []
    for i in range(servers):
        server: dict[str, Any] = {
            "name": f"server-{i:02d}",
            "url": f"https://mcp-{i:02d}.tenant-example.com/mcp",
            "headers_secret": f"server-{i:02d}",
            "tool_loading": "auto",
            "timeout_s": 20,
        }
        if i % 2:
            server["tools"] = {"delete_everything": {"enabled": False}}
        out.append(server)
    return {"routing_mode": "retrieve_tools", "direct_tool_response_mode": "auto", "servers": out}


def _partition(client: Any, table: str, pk: str) -> list[dict[str, Any]]:
    return paginate(
        client.query,
        TableName=table,
        KeyConditionExpression="pk = :pk",
        ExpressionAttributeValues={":pk": {"S": pk}},
    )


def _tenant_bytes(client: Any, table: str, tenant: str) -> dict[str, int]:
    """Item bytes a tenant keeps: its catalog partition (live items only: superseded versions carry
    ``expires_at`` and are deleted by TTL after the grace hour), approvals, config and registry entry."""
    items = [i for i in _partition(client, table, f"TENANT#{tenant}") if "expires_at" not in i]
    items += _partition(client, table, f"APPROVAL#{tenant}")
    entry = client.get_item(TableName=table, Key={"pk": {"S": "TENANTS"}, "sk": {"S": tenant}}).get("Item")
    items += [entry] if entry else []
    sizes = [item_bytes(i) for i in items]
    chunks = sum(item_bytes(i) for i in items if i["sk"]["S"].startswith("VERSION#"))
    return {
        "items": len(items),
        "item_bytes": sum(sizes),
        "storage_bytes": sum(sizes) + STORAGE_OVERHEAD * len(items),
        "catalog_chunk_bytes": chunks,
    }


def _corpus_row(
    label: str, path: Path, tenant: str, table: str, meter: CapacityMeter, embedder: Any
) -> dict[str, Any]:
    rows = load_catalog_rows(path)
    names = safe_server_names(str(r["server"]) for r in rows)
    by_server: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_server.setdefault(names[str(r["server"])], []).append(r)
    doc = {"servers": [{"name": n, "url": f"https://{n}.example.com/mcp"} for n in by_server]}
    configs = DynamoTenantConfigStore(table)
    configs.put(tenant, doc)
    upstream = _CorpusUpstream(by_server)
    indexer = Indexer(DynamoStore(table), upstream, approvals=DynamoApprovalStore(table), embedder=embedder)
    # max_age 0: every run reads the tenant's document, as a cold indexer instance does.
    job = IndexJob(indexer, TableConfigSource(configs, PREFIX, max_age=0), concurrency=1)

    def counted(request: IndexRequest) -> dict[str, Any]:
        meter.reset()
        result = asyncio.run(job.run(request))
        assert not result.errors, result.errors
        return meter.snapshot()

    ops: dict[str, Any] = {"first_index": counted(IndexRequest("invoke", (tenant,), force_config=True))}
    ops["unchanged_schedule_run"] = counted(IndexRequest("schedule", (tenant,)))
    first = next(iter(by_server))
    by_server[first][0] = {**by_server[first][0], "description": f"changed {time.time()}"}
    ops["changed_run"] = counted(IndexRequest("schedule", (tenant,)))
    counted(IndexRequest("freshness", (tenant,)))  # the warm instance learns the current version
    ops["freshness_run"] = counted(IndexRequest("freshness", (tenant,)))
    for name, read in (
        ("catalog_load", lambda: DynamoStore(table).load_current(tenant)),
        ("pointer_check", lambda: DynamoStore(table).current_version(tenant)),
        ("config_read", lambda: configs.get(tenant)),
    ):
        meter.reset()
        read()
        ops[name] = meter.snapshot()
    size = _tenant_bytes(dynamodb_client(), table, tenant)
    tools = len(rows)
    return {
        "label": label,
        "tools": tools,
        "servers": len(by_server),
        **size,
        "storage_bytes_per_tool": round(size["storage_bytes"] / tools),
        "ops": ops,
    }


def _registry_listing(client: Any, table: str, start: int, stop: int) -> dict[str, Any]:
    """Write registry entries ``start`` to ``stop`` (as ``put`` writes them), then list every tenant
    through the source."""
    # boto3 loads only when this bench runs.
    import boto3
    from botocore.config import Config

    now = time.time()
    entries = [registry_item(f"tenant-{i:06d}", revision_of({"n": i}), now) for i in range(start, stop)]
    for start in range(0, len(entries), 25):
        batch = [{"PutRequest": {"Item": e}} for e in entries[start : start + 25]]
        client.batch_write_item(RequestItems={table: batch})
    # moto answers a 10,000-item Query in seconds (DynamoDB in milliseconds): a patient client of its own.
    patient = boto3.client("dynamodb", config=Config(read_timeout=300, retries={"max_attempts": 1}))
    calls: list[str] = []
    patient.meta.events.register("before-call.dynamodb.*", lambda model, **_: calls.append(model.name))
    listed = TableConfigSource(DynamoTenantConfigStore(table, client=patient), PREFIX).tenants()
    assert len(listed) >= stop
    entry = sum(item_bytes(e) for e in entries) / len(entries)
    total = entry * len(listed)
    return {
        "tenants": len(listed),
        "moto_calls": calls.count("Query"),
        "aws_query_calls": max(1, math.ceil(total / _PAGE_BYTES)),
        "entry_bytes": round(entry),
        "aws_rru": math.ceil(total / 4096) * 0.5,
    }


def _ssm_listing(parameters: int, servers: int) -> dict[str, Any]:
    """Put ``parameters`` parameters (tenants of one config and ``servers - 1`` server parameters
    each) and count DescribeParameters calls to list the tenants."""
    # boto3 loads only when this bench runs.
    import boto3

    ssm = boto3.client("ssm")
    prefix = f"/bench-{uuid.uuid4().hex[:8]}"
    per_tenant = servers
    tenants = parameters // per_tenant
    for t in range(tenants):
        base = f"{prefix}/tenants/t{t:05d}"
        ssm.put_parameter(Name=f"{base}/config", Value="{}", Type="String")
        for s in range(per_tenant - 1):
            ssm.put_parameter(
                Name=f"{base}/servers/s{s:02d}", Value='{"url": "https://x.example"}', Type="String"
            )
    calls: list[int] = []
    ssm.meta.events.register("before-call.ssm.DescribeParameters", lambda **_: calls.append(1))
    listed = SsmConfigSource(prefix, client=ssm).tenants()
    assert len(listed) == tenants
    n = tenants * per_tenant
    return {
        "parameters": n,
        "tenants": tenants,
        "moto_calls": len(calls),  # moto pages 10 names whatever is asked
        "aws_calls_boto3_default_page_10": math.ceil(n / 10),
        "aws_calls_page_50": math.ceil(n / 50),
    }


def run_scale_storage_bench(
    corpora_dir: Path,
    *,
    registry_sizes: tuple[int, ...] = (71, 10_000),
    ssm_parameters: int = 1_420,
    assumptions: CostAssumptions | None = None,
    embedder: Any = None,
) -> dict[str, Any]:
    """Measure bytes, listing calls and the cost model on a fresh moto_server."""
    a = assumptions or CostAssumptions()
    report: dict[str, Any] = {"corpora_dir": str(corpora_dir), "corpora": [], "skipped": []}
    doc = sample_config(a.servers_per_tenant)
    report["config_document"] = {"servers": a.servers_per_tenant, "bytes": len(canonical(doc).encode())}
    with moto_server():
        client = dynamodb_client()
        meter = CapacityMeter()
        meter.attach(client)
        table = f"foldgate-bench-{uuid.uuid4().hex[:8]}"
        create_table_from_template(client, table)
        configs = DynamoTenantConfigStore(table)
        configs.put("config-sample", doc)
        item = client.get_item(
            TableName=table, Key={"pk": {"S": "TENANT#config-sample"}, "sk": {"S": "CONFIG"}}
        )
        report["config_document"]["item_bytes"] = item_bytes(item["Item"])
        for i, (label, rel) in enumerate(CORPORA):
            path = corpora_dir / rel
            if not path.exists():
                report["skipped"].append(str(path))
                continue
            report["corpora"].append(_corpus_row(label, path, f"corpus-{i}", table, meter, embedder))
        # The registry rows below list exactly the tenants they wrote.
        for tenant in ("config-sample", *configs.tenants()):
            configs.delete(tenant)
        report["ssm_listing"] = _ssm_listing(ssm_parameters, a.servers_per_tenant)
        report["ssm_listing_200k"] = {
            "parameters": 200_000,
            "aws_calls_boto3_default_page_10": 20_000,
            "aws_calls_page_50": 4_000,
            "note": "more than the advanced tier's 100,000 parameters per account and region",
        }
        report["registry_listing"] = []
        done = 0
        for n in sorted(set(registry_sizes)):
            report["registry_listing"].append(_registry_listing(client, table, done, n))
            done = n
    report["parameter_store_at_10k"] = parameter_store_at(
        10_000, a.servers_per_tenant, a.secrets_per_tenant, report["config_document"]["bytes"]
    )
    if report["corpora"]:
        units = _units(report["corpora"], a)
        report["cost"] = {**tenant_month(units, a), "measured_on": units["measured_on"]}
    return report


def _units(rows: list[dict[str, Any]], a: CostAssumptions) -> dict[str, Any]:
    """Per-event units for a tenant of ``a.tools_per_tenant`` tools: catalog-size-dependent units
    scaled per tool from the measured corpus nearest in size, the rest as measured on it."""
    row = min(rows, key=lambda r: abs(r["tools"] - a.tools_per_tenant))
    scale = a.tools_per_tenant / row["tools"]
    ops = row["ops"]
    return {
        "measured_on": row["label"],
        "schedule_rru": ops["unchanged_schedule_run"]["rru"] * scale,
        "freshness_rru": ops["freshness_run"]["rru"],
        "publish_rru": max(0.0, ops["changed_run"]["rru"] - ops["unchanged_schedule_run"]["rru"]) * scale,
        "publish_wru": ops["changed_run"]["wru"] * scale,
        "load_rru": ops["catalog_load"]["rru"] * scale,
        "pointer_rru": ops["pointer_check"]["rru"],
        "config_rru": ops["config_read"]["rru"],
        "token_rru": 1.0,  # one strongly consistent GetItem of a < 4 KB token item
        "storage_bytes": round(row["storage_bytes"] * scale),
    }


def format_scale_storage_report(r: dict[str, Any]) -> str:
    """A human-readable summary."""
    skipped = f" (skipped: {', '.join(r['skipped'])})" if r["skipped"] else ""
    out = [f"corpora: {r['corpora_dir']}{skipped}"]
    cd = r["config_document"]
    out.append(
        f"tenant config document, {cd['servers']} servers: {cd['bytes']:,} bytes "
        f"({cd['item_bytes']:,} B item)"
    )
    out.append("bytes in DynamoDB per tenant (live items, DynamoDB size rules; storage adds 100 B/item):")
    for c in r["corpora"]:
        out.append(
            f"  {c['label']:<20} {c['tools']:>4} tools {c['servers']:>3} servers: {c['items']:>4} items, "
            f"{c['item_bytes']:>9,} B, storage {c['storage_bytes']:>9,} B "
            f"= {c['storage_bytes_per_tool']:,} B/tool"
        )
        for name, op in c["ops"].items():
            calls = ", ".join(f"{k} {v}" for k, v in sorted(op["calls"].items()))
            out.append(f"      {name:<24} RRU {op['rru']:>7}  WRU {op['wru']:>7}  ({calls})")
    s = r["ssm_listing"]
    out.append(
        f"listing tenants, Parameter Store at {s['parameters']:,} parameters ({s['tenants']} tenants): "
        f"moto {s['moto_calls']} calls; AWS {s['aws_calls_boto3_default_page_10']} (page 10, before) -> "
        f"{s['aws_calls_page_50']} (page 50)"
    )
    s2 = r["ssm_listing_200k"]
    out.append(
        f"  at 200,000 parameters (computed): {s2['aws_calls_boto3_default_page_10']:,} -> "
        f"{s2['aws_calls_page_50']:,} calls; {s2['note']}"
    )
    for g in r["registry_listing"]:
        out.append(
            f"listing tenants, table registry at {g['tenants']:,} tenants: moto {g['moto_calls']} "
            f"Query call(s); AWS {g['aws_query_calls']} call(s) (1 MB pages of {g['entry_bytes']} B "
            f"entries), {g['aws_rru']} RRU"
        )
    p = r["parameter_store_at_10k"]
    out.append(
        f"Parameter Store at 10,000 tenants: {p['parameters_one_per_server']:,} parameters one per "
        f"server, {p['parameters_one_document_per_tenant']:,} one document per tenant (limits 10,000 "
        f"standard, 100,000 advanced); a {p['document_bytes']:,} B document fits 4 KB: "
        f"{p['document_fits_standard_4kb']}, 8 KB: {p['document_fits_advanced_8kb']}; advanced "
        f"documents ${p['advanced_documents_usd_month']:,}/month"
    )
    cost = r.get("cost")
    if cost:
        q = cost["quantities"]
        total = cost["total_usd"]
        out.append(f"cost per tenant-month: ${total} (x 10,000 tenants = ${total * 10_000:,.0f})")
        for k, v in cost["usd"].items():
            out.append(f"  {k:<24} ${v:.4f}")
        out.append(
            f"  quantities: {q['mcp_gb_s']} GB-s serving, {q['indexer_gb_s']} GB-s indexing, "
            f"{q['rru_serving']:,} RRU serving, {q['rru_indexing']:,} RRU indexing, {q['wru']:,} WRU, "
            f"{q['storage_bytes']:,} B, {q['sqs_requests']:,} SQS requests, "
            f"{q['ssm_get_parameter']:,} SSM GetParameter ({q['ssm_advanced_secrets']} advanced secrets)"
        )
        side = cost["secret_store"]
        out.append(
            f"  secrets (SecretStore): ssm ${side['ssm_usd']:.4f}, table ${side['table_usd']:.4f}; "
            f"tenant-month ${side['total_usd_with_ssm']} with ssm, ${side['total_usd_with_table']} with table"
        )
        out.append(f"  measured on: {cost['measured_on']}; assumptions: {cost['assumptions']}")
    return "\n".join(out)


def assumptions_from(args: Any) -> CostAssumptions:
    """The CLI's assumption options as a CostAssumptions (unset ones keep their defaults)."""
    fields = {f.name for f in dataclasses.fields(CostAssumptions)}
    return CostAssumptions(**{k: v for k, v in vars(args).items() if k in fields and v is not None})
