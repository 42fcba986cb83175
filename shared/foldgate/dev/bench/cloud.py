"""``foldgate bench cloud``: the serverless shape against a local AWS-API server (moto_server).

Two figures, each next to the embedded SQLite path measured in the same run (ratios survive a noisy
machine; moto is a stand-in for DynamoDB, so absolute times are loopback times, not AWS times):

* indexer throughput: tools/s to build a catalog version (signatures, pre-rendered fragments) and to
  publish it (chunks + conditional pointer flip) into DynamoDB vs SQLite;
* the MCP Lambda's warm ``tools/list`` latency through Mangum with a real API Gateway v2 event, with the
  catalog cached in memory (the normal warm path) and with the pointer re-read on every request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, create_table_from_template, moto_server
from foldgate.dev.bench.serve import safe_server_names
from foldgate.dev.corpus import load_catalog
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.catalog import CatalogVersion
from foldgate.model.tool import Tool
from foldgate.store.catalog.base import CatalogStore, encode_catalog
from foldgate.store.catalog.dynamodb import DynamoStore
from foldgate.store.catalog.sqlite import SqliteStore

__all__ = ["format_cloud_report", "run_cloud_bench"]

_EVENT = TEMPLATE.parent / "events" / "mcp_tools_list.json"


class _Context:
    function_name = "bench"
    aws_request_id = "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench"
    memory_limit_in_mb = 1024

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def _renamed(tools: list[Tool]) -> list[Tool]:
    names = safe_server_names(t.server for t in tools)
    return [dataclasses.replace(t, server=names[t.server]) for t in tools]


def _publish_s(store: CatalogStore, catalog: CatalogVersion) -> float:
    t = time.perf_counter()
    store.publish(catalog, expected_current=store.current_version(catalog.tenant))
    return time.perf_counter() - t


def _index_row(tools: list[Tool], sqlite: SqliteStore, dynamo: DynamoStore, tenant: str) -> dict[str, Any]:
    catalog_from_tools(tenant, tools[:50])  # warm: lazy imports, tokenizer tables
    t = time.perf_counter()
    catalog = catalog_from_tools(tenant, tools)
    build_s = time.perf_counter() - t
    blob = len(encode_catalog(catalog))
    sq = [
        _publish_s(sqlite, dataclasses.replace(catalog, version=f"{catalog.version}-s{i}")) for i in range(3)
    ]
    dy = [
        _publish_s(dynamo, dataclasses.replace(catalog, version=f"{catalog.version}-d{i}")) for i in range(3)
    ]
    sq_s, dy_s = statistics.median(sq), statistics.median(dy)
    n = len(tools)
    return {
        "tools": n,
        "compressed_bytes": blob,
        "chunks": -(-blob // dynamo.chunk_bytes),
        "build_tools_per_s": round(n / build_s),
        "sqlite_tools_per_s": round(n / sq_s),
        "dynamodb_tools_per_s": round(n / dy_s),
        "dynamodb_publish_ms": round(dy_s * 1000, 1),
        "sqlite_publish_ms": round(sq_s * 1000, 1),
        "publish_ratio": round(dy_s / sq_s, 2),
    }


# The MCP function's app for the settings (foldgate.app.wiring.build_mcp_app, handed in by the CLI:
# dev tooling sits below the app that runs it).
BuildApp = Callable[[Settings], Any]


def _lambda_handler(
    build_app: BuildApp, settings: Settings
) -> Callable[[dict[str, Any], Any], dict[str, Any]]:
    # Heavy benchmark dependencies load only when this bench runs.
    from mangum import Mangum

    handler: Callable[[dict[str, Any], Any], dict[str, Any]] = Mangum(build_app(settings), lifespan="off")
    return handler


def _p50_ms(handler: Callable[[dict[str, Any], Any], dict[str, Any]], event: dict[str, Any], n: int) -> float:
    for _ in range(max(3, n // 10)):
        response = handler(event, _Context())
        assert response["statusCode"] == 200, response.get("body", "")[:200]
    listed = json.loads(response["body"])["result"]["tools"]
    assert len(listed) > 1, "the bench tenant lists no tools"
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        handler(event, _Context())
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def _latency(
    build_app: BuildApp, tmp: Path, sqlite_path: Path, table: str, tenant: str, tools: list[Tool], n: int
) -> dict[str, Any]:
    servers = [{"name": s, "url": "http://127.0.0.1:9/mcp"} for s in dict.fromkeys(t.server for t in tools)]
    config = tmp / "config.json"
    config.write_text(json.dumps({"direct_tool_response_mode": "deferred", "servers": servers}))
    event = json.loads(_EVENT.read_text())
    common = Settings(config_source="file", config_file=str(config), default_tenant=tenant)
    out: dict[str, Any] = {}
    for label, ttl in (("cached", 60.0), ("pointer_each_request", 0.0)):
        sq = _lambda_handler(
            build_app,
            common.model_copy(
                update={"store": "sqlite", "sqlite_path": str(sqlite_path), "catalog_cache_seconds": ttl}
            ),
        )
        dy = _lambda_handler(
            build_app,
            common.model_copy(
                update={"store": "dynamodb", "table_name": table, "catalog_cache_seconds": ttl}
            ),
        )
        rounds = [(_p50_ms(sq, event, n), _p50_ms(dy, event, n)) for _ in range(2)]  # interleaved
        s50 = statistics.median(r[0] for r in rounds)
        d50 = statistics.median(r[1] for r in rounds)
        out[label] = {
            "sqlite_p50_ms": round(s50, 3),
            "dynamodb_p50_ms": round(d50, 3),
            "ratio": round(d50 / s50, 2),
        }
    return out


def run_cloud_bench(build_app: BuildApp, corpora: list[str | Path], *, requests: int = 100) -> dict[str, Any]:
    """Index each corpus into moto-backed DynamoDB and SQLite; time the MCP Lambda (the app
    ``build_app`` builds) on the first."""
    # Heavy benchmark dependencies load only when this bench runs.
    import boto3

    # Mangum asks for the thread's event loop, as on Lambda.
    asyncio.set_event_loop(asyncio.new_event_loop())
    report: dict[str, Any] = {"requests": requests, "corpora": {}}
    with moto_server(), tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        table = f"foldgate-bench-{uuid.uuid4().hex[:8]}"
        create_table_from_template(boto3.client("dynamodb"), table)
        sqlite_path = tmp / "bench.sqlite3"
        sqlite, dynamo = SqliteStore(sqlite_path), DynamoStore(table)
        for i, corpus in enumerate(corpora):
            tools = _renamed(load_catalog(Path(corpus)))
            tenant = f"t{i}"
            row = _index_row(tools, sqlite, dynamo, tenant)
            if i == 0:
                row["mcp_lambda_tools_list"] = _latency(
                    build_app, tmp, sqlite_path, table, tenant, tools, requests
                )
            report["corpora"][str(corpus)] = row
        sqlite.close()
    return report


def format_cloud_report(r: dict[str, Any]) -> str:
    """A human-readable summary of the report."""
    lines = []
    for corpus, row in r["corpora"].items():
        lines.append(
            f"{corpus}: {row['tools']:,} tools, catalog {row['compressed_bytes']:,} bytes compressed "
            f"({row['chunks']} chunk(s))"
        )
        lines.append(f"  build (signatures + fragments)  {row['build_tools_per_s']:>10,} tools/s")
        lines.append(
            f"  publish sqlite                  {row['sqlite_tools_per_s']:>10,} tools/s "
            f"({row['sqlite_publish_ms']} ms)"
        )
        lines.append(
            f"  publish dynamodb (moto)         {row['dynamodb_tools_per_s']:>10,} tools/s "
            f"({row['dynamodb_publish_ms']} ms, {row['publish_ratio']}x sqlite)"
        )
        lat = row.get("mcp_lambda_tools_list")
        if lat:
            for label, cell in lat.items():
                lines.append(
                    f"  MCP Lambda tools/list, {label.replace('_', ' ')}: "
                    f"dynamodb p50 {cell['dynamodb_p50_ms']} ms vs sqlite {cell['sqlite_p50_ms']} ms "
                    f"(ratio {cell['ratio']})"
                )
    return "\n".join(lines)
