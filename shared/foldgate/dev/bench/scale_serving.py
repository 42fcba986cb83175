"""``foldgate bench scale-serving``: one serving process over many tenants within its memory budget.

Method. Tenant catalogs are drawn from ``../shared/corpora`` (every ``tools.jsonl`` pooled): a few
dozen template catalogs of 50-500 tools are built once (search index, rendered entries; no upstream
is indexed), and every tenant publishes its own copy of one of them straight into the store (DynamoDB
on moto_server by default, SQLite with ``--store sqlite``), so each tenant's catalog is read and
decoded on its own, as in production. A fresh serving process (spawned, so the seeding's memory is
not in its RSS) then answers a Zipf(s) mix of ``tools/list`` and ``retrieve_tools`` requests over the
tenants through the gateway (the request path below the HTTP layer, which adds the same constant to
every request), and prints:

* its RSS: the baseline (imports done, one small tenant served) and the peak during the mix, against
  the baseline plus ``FOLDGATE_CACHE_MB``;
* the hottest tenant's ``tools/list`` and ``retrieve_tools`` p95 while the mix runs vs the same tenant
  served alone in the same process (before the mix), as a ratio;
* a cold tenant's first request (catalog read from the store, decoded, searcher and view built) in
  ms per MB of catalog (its tools' wire JSON);
* the cache's hit rate, evictions and bytes (:meth:`foldgate.model.lru.MemoryBudget.stats`).

moto_server keeps every item in its own memory: on a 2-core machine it grew to ~2.4 GB and answered a
transactional write in over 5 s (the client's read timeout) past ~1,000 seeded tenants. 2,000 tenants
were measured with ``--store sqlite``; DynamoDB on moto with ``--tenants 500``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import json
import multiprocessing
import random
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from foldgate.dev.bench.serve import safe_server_names
from foldgate.dev.corpus import load_catalog
from foldgate.model.tool import Tool

__all__ = ["format_scale_serving_report", "run_scale_serving_bench"]

CORPORA = Path(__file__).resolve().parents[4].parent / "shared" / "corpora"
_QUERIES = (
    "create an issue", "send a message to a channel", "list files in a folder", "search the web",
    "get the weather forecast", "read a document", "delete a record", "update a calendar event",
    "query a database table", "find a user by email", "upload an image", "translate text",
)  # fmt: skip
_SAMPLE_EVERY = 250  # requests between RSS samples


def _pool(corpora: Path) -> list[Tool]:
    tools: list[Tool] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted(corpora.glob("*/tools.jsonl")):
        for tool in load_catalog(path):
            if (tool.server, tool.name) not in seen:
                seen.add((tool.server, tool.name))
                tools.append(tool)
    names = safe_server_names(t.server for t in tools)
    return [dataclasses.replace(t, server=names[t.server]) for t in tools]


def _templates(pool: list[Tool], count: int, rng: random.Random) -> list[dict[str, Any]]:
    """``count`` catalogs of 50-500 tools (evenly spread), each a run of whole servers from the pool."""
    # Heavy benchmark dependencies load only when this bench runs.
    from foldgate.index.indexer import catalog_from_tools

    by_server: dict[str, list[Tool]] = {}
    for tool in pool:
        by_server.setdefault(tool.server, []).append(tool)
    servers = list(by_server)
    out = []
    for i in range(count):
        want = 50 + round(450 * i / max(1, count - 1))
        rng.shuffle(servers)
        tools: list[Tool] = []
        for server in servers:
            tools.extend(by_server[server][: want - len(tools)])
            if len(tools) >= want:
                break
        catalog = catalog_from_tools("template", tools)
        wire_mb = len(json.dumps([t.to_wire() for t in tools])) / 1e6
        out.append({"catalog": catalog, "servers": sorted({t.server for t in tools}), "wire_mb": wire_mb})
    return out


def _open_store(kind: str, where: str) -> Any:
    if kind == "dynamodb":
        # Only the store this run uses is loaded (boto3 stays out of a SQLite run).
        from foldgate.store.catalog.dynamodb import DynamoStore

        return DynamoStore(where)
    # Only the store this run uses is loaded.
    from foldgate.store.catalog.sqlite import SqliteStore

    return SqliteStore(where)


def _seed(store: Any, templates: list[dict[str, Any]], tenants: int, rng: random.Random) -> list[int]:
    """Publish every tenant's copy of its template; returns each tenant's template index."""
    # Heavy benchmark dependencies load only when this bench runs.
    from foldgate.model.catalog import new_version_id

    assigned = [rng.randrange(len(templates)) for _ in range(tenants)]
    for i, which in enumerate(assigned):
        template = templates[which]["catalog"]
        copy = dataclasses.replace(template, tenant=f"t{i:05d}", version=new_version_id())
        store.publish(copy, expected_current=None)
    return assigned


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _p95(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0


async def _serve(params: dict[str, Any]) -> dict[str, Any]:
    """The serving process's run (spawned: its RSS holds only what serving needs)."""
    # Heavy benchmark dependencies load only when this bench runs.
    from foldgate.config.source import StaticConfigSource
    from foldgate.config.tenant import parse_tenant_config
    from foldgate.model.lru import MemoryBudget
    from foldgate.serve.catalogs import CatalogCache
    from foldgate.serve.gateway import Gateway
    from foldgate.upstream.client import UpstreamClient

    store = _open_store(params["store"], params["where"])
    templates: list[list[str]] = params["servers"]
    configs = {}
    parsed = [
        parse_tenant_config({"servers": [{"name": s, "url": "http://127.0.0.1:9/mcp"} for s in servers]})
        for servers in templates
    ]
    for i, which in enumerate(params["assigned"]):
        configs[f"t{i:05d}"] = parsed[which]
    memory = MemoryBudget(params["cache_mb"] * 1024 * 1024)
    gateway = Gateway(
        CatalogCache(store, ttl=3600, memory=memory), StaticConfigSource(configs), UpstreamClient()
    )
    wire_mb: list[float] = params["wire_mb"]
    tenants = len(params["assigned"])

    async def request(tenant: str, kind: str, query: str) -> float:
        t = time.perf_counter()
        if kind == "list":
            gateway.listing_json(tenant, "direct")
        else:
            await gateway.call(tenant, "retrieve_tools", {"query": query, "limit": 10}, "call")
        return (time.perf_counter() - t) * 1000

    # Baseline: imports done and one small tenant served (then forgotten).
    smallest = min(range(tenants), key=lambda i: wire_mb[params["assigned"][i]])
    for kind in ("list", "search"):
        await request(f"t{smallest:05d}", kind, _QUERIES[0])
    memory.clear()
    gc.collect()
    baseline = _rss_mb()

    rng = random.Random(params["seed"])
    ranks = list(range(tenants))
    rng.shuffle(ranks)  # the hottest tenant is any size
    hot = f"t{ranks[0]:05d}"
    alone: dict[str, list[float]] = {"list": [], "search": []}
    for n in range(params["alone"]):
        for kind in ("list", "search"):
            alone[kind].append(await request(hot, kind, _QUERIES[n % len(_QUERIES)]))

    weights = [1.0 / (r + 1) ** params["zipf_s"] for r in range(tenants)]
    picks = rng.choices(ranks, weights=weights, k=params["requests"])
    mixed: dict[str, list[float]] = {"list": [], "search": []}
    cold_ms_per_mb: list[float] = []
    cold_ms: list[float] = []
    peak = baseline
    hot_misses = 0
    for n, i in enumerate(picks):
        tenant = f"t{i:05d}"
        kind = "list" if n % 2 == 0 else "search"
        cold = gateway.catalogs._catalogs.peek(tenant) is None
        if tenant == hot and (cold or gateway.searchers._search.peek(tenant) is None):
            hot_misses += 1
        ms = await request(tenant, kind, _QUERIES[n % len(_QUERIES)])
        if tenant == hot:
            mixed[kind].append(ms)
        elif cold:
            cold_ms.append(ms)
            cold_ms_per_mb.append(ms / wire_mb[params["assigned"][i]])
        if n % _SAMPLE_EVERY == 0:
            peak = max(peak, _rss_mb())
    peak = max(peak, _rss_mb())
    stats = memory.stats()
    hot_mb = wire_mb[params["assigned"][ranks[0]]]
    return {
        "baseline_rss_mb": round(baseline, 1),
        "peak_rss_mb": round(peak, 1),
        "bound_mb": round(baseline + params["cache_mb"], 1),
        "distinct_tenants": len(set(picks)),
        "hot_tenant": {
            "tools": len(gateway.catalog(hot).tools),  # type: ignore[union-attr]
            "catalog_mb": round(hot_mb, 3),
            "share": round(picks.count(ranks[0]) / len(picks), 3),
            "requests_without_its_catalog_or_searcher": hot_misses,
        },
        "hot": {
            kind: {
                "alone_p95_ms": round(_p95(alone[kind]), 3),
                "mixed_p95_ms": round(_p95(mixed[kind]), 3),
                "ratio": round(_p95(mixed[kind]) / _p95(alone[kind]), 3) if alone[kind] else 0.0,
                "mixed_samples": len(mixed[kind]),
            }
            for kind in ("list", "search")
        },
        "cold": {
            "requests": len(cold_ms),
            "median_ms": round(statistics.median(cold_ms), 2) if cold_ms else 0.0,
            "median_ms_per_mb": round(statistics.median(cold_ms_per_mb), 1) if cold_ms_per_mb else 0.0,
        },
        "cache": {k: v for k, v in stats.items() if k != "kinds"},
        "cache_kinds": stats["kinds"],
    }


def _child(params: dict[str, Any], conn: Any) -> None:
    conn.send(asyncio.run(_serve(params)))
    conn.close()


def run_scale_serving_bench(
    *,
    tenants: int = 2000,
    requests: int = 20_000,
    cache_mb: int | None = None,
    store: str = "dynamodb",
    templates: int = 24,
    zipf_s: float = 1.1,
    alone: int = 200,
    corpora: Path = CORPORA,
    seed: int = 11,
) -> dict[str, Any]:
    """Seed ``tenants`` tenants and run one serving process over them (see the module docstring);
    ``cache_mb`` None: the Settings default. Skipped (with the reason) when the corpora are absent."""
    # Heavy benchmark dependencies load only when this bench runs.
    from foldgate.config.settings import Settings

    if not any(corpora.glob("*/tools.jsonl")):
        return {"skipped": f"no corpora at {corpora} (the team kit ../shared is not beside this checkout)"}
    budget = cache_mb if cache_mb is not None else Settings().cache_mb
    rng = random.Random(seed)
    t = time.perf_counter()
    built = _templates(_pool(corpora), templates, rng)
    build_s = time.perf_counter() - t
    report: dict[str, Any] = {
        "tenants": tenants, "requests": requests, "cache_mb": budget, "store": store, "zipf_s": zipf_s,
        "templates": templates, "template_build_s": round(build_s, 1),
    }  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        if store == "dynamodb":
            # Heavy benchmark dependencies load only when this bench runs.
            import boto3

            from foldgate.dev.bench.moto import create_table_from_template, moto_server

            with moto_server():
                table = f"foldgate-scale-{uuid.uuid4().hex[:8]}"
                create_table_from_template(boto3.client("dynamodb"), table)
                report.update(_run(_open_store(store, table), table, built, report, rng, seed, alone))
        else:
            where = str(Path(tmp) / "scale.sqlite3")
            report.update(_run(_open_store(store, where), where, built, report, rng, seed, alone))
    return report


def _run(
    opened: Any,
    where: str,
    built: list[dict[str, Any]],
    report: dict[str, Any],
    rng: random.Random,
    seed: int,
    alone: int,
) -> dict[str, Any]:
    t = time.perf_counter()
    assigned = _seed(opened, built, report["tenants"], rng)
    seed_s = time.perf_counter() - t
    params = {
        "store": report["store"], "where": where, "assigned": assigned, "cache_mb": report["cache_mb"],
        "servers": [b["servers"] for b in built], "wire_mb": [b["wire_mb"] for b in built],
        "requests": report["requests"], "zipf_s": report["zipf_s"], "alone": alone, "seed": seed,
    }  # fmt: skip
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(params, child))
    t = time.perf_counter()
    proc.start()
    child.close()
    result: dict[str, Any] = parent.recv()
    proc.join()
    sizes = [len(built[a]["catalog"].tools) for a in assigned]
    return {
        "seed_s": round(seed_s, 1),
        "serve_s": round(time.perf_counter() - t, 1),
        "tools_per_tenant": {"min": min(sizes), "median": statistics.median(sizes), "max": max(sizes)},
        **result,
    }


def format_scale_serving_report(r: dict[str, Any]) -> str:
    """A human-readable summary of the report."""
    if "skipped" in r:
        return f"scale-serving: skipped: {r['skipped']}"
    sizes = r["tools_per_tenant"]
    cache = r["cache"]
    where = f"{r['store']}{' (moto_server)' if r['store'] == 'dynamodb' else ''}"
    verdict = "within" if r["peak_rss_mb"] <= r["bound_mb"] else "OVER"
    lines = [
        f"{r['tenants']:,} tenants ({sizes['min']}-{sizes['max']} tools, median {sizes['median']}) on "
        f"{where}; {r['requests']:,} requests, Zipf s={r['zipf_s']}, {r['distinct_tenants']:,} distinct "
        f"tenants; FOLDGATE_CACHE_MB={r['cache_mb']}",
        f"  seeding: {r['templates']} template catalogs built in {r['template_build_s']} s, "
        f"{r['tenants']:,} versions published in {r['seed_s']} s; serving run {r['serve_s']} s",
        f"  RSS: baseline {r['baseline_rss_mb']} MB, peak {r['peak_rss_mb']} MB, "
        f"bound (baseline + cache) {r['bound_mb']} MB -> {verdict}",
    ]
    hot = r["hot_tenant"]
    lines.append(
        f"  hot tenant: {hot['tools']} tools ({hot['catalog_mb']} MB), {hot['share']:.0%} of the requests"
    )
    for kind, label in (("list", "tools/list"), ("search", "retrieve_tools")):
        row = r["hot"][kind]
        lines.append(
            f"    {label:<15} p95 alone {row['alone_p95_ms']} ms, in the mix {row['mixed_p95_ms']} ms "
            f"(ratio {row['ratio']}, {row['mixed_samples']} samples)"
        )
    cold = r["cold"]
    lines.append(
        f"  cold first request: median {cold['median_ms']} ms, {cold['median_ms_per_mb']} ms per MB of "
        f"catalog ({cold['requests']:,} cold requests)"
    )
    lines.append(
        f"  cache: hit rate {cache['hit_rate']:.1%}, {cache['evictions']:,} evictions, "
        f"{cache['bytes'] / 1e6:.1f} MB held of {cache['budget_bytes'] / 1e6:.1f} MB, "
        f"{cache['entries']:,} entries, {cache['oversize']} over the budget"
    )
    return "\n".join(lines)
