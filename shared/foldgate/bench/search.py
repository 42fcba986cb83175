"""``foldgate bench search``: retrieval quality and latency of the lexical tool search on a real catalog.

Query files (auto-detected):

- mcpproxy's golden set: a JSON object ``{"queries": [{"query", "labels": [{"tool_id": "server:tool",
  "relevance": 0|1|2}]}]}``; relevance ≥ 1 is relevant, graded gains feed nDCG;
- JSON lines ``{"query", "expected": ["server__tool", ...]}`` (``server:tool`` accepted too); every
  expected tool is relevant with gain 1.

Metrics, averaged over the queries with at least one relevant tool present in the catalog (the
others are still run and timed, and counted as ``unjudged``):

- ``recall@k``: the fraction of a query's relevant tools found in its top k, averaged over queries —
  mean per-query recall, the definition behind mcpproxy's published figures (Recall@5 0.681) and the
  plain-BM25 figures in corpora/README.md (0.748), so the numbers compare directly;
- ``mrr``: 1 / rank of the first relevant tool in the returned page (0 when none), averaged;
- ``ndcg@10``: Σ gain / log2(rank + 1) over the top 10, divided by the same sum for the ideal order of
  the query's relevant tools; gain = the graded relevance (golden set) or 1;
- ``p50_ms`` / ``p95_ms``: wall time of one ``SearchIndex.search`` call on the index as the request
  path has it (after ``to_doc`` → zlib → ``from_doc``), one run per query after a short warm-up.

Build time, the serialised size (JSON and zlib) and the load time are printed too.
"""

from __future__ import annotations

import json
import math
import statistics
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foldgate.catalog import Tool
from foldgate.corpus import load_catalog
from foldgate.errors import CorpusError
from foldgate.search import DEFAULT, SearchConfig, SearchIndex, build_search_index

__all__ = ["BenchQuery", "format_search_report", "load_queries", "run_search_bench", "score_ranking"]

_KS = (1, 5, 10)
_WARMUP = 20


@dataclass(frozen=True, slots=True)
class BenchQuery:
    """One query and its relevant tools (canonical key → gain ≥ 1); empty when none is in the catalog."""

    text: str
    relevant: dict[str, int]


def _registry(tools: list[Tool]) -> dict[str, str]:
    reg: dict[str, str] = {}
    for t in tools:
        reg.setdefault(f"{t.server}__{t.name}", t.key)
        reg.setdefault(t.key, t.key)
    return reg


def load_queries(path: str | Path, tools: list[Tool]) -> list[BenchQuery]:
    """Read a query file in either shared format, resolving tool ids against ``tools``."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise CorpusError(f"cannot read queries {p}: {exc.strerror or exc}") from exc
    reg = _registry(tools)
    out: list[BenchQuery] = []
    stripped = text.lstrip()
    doc: Any = None
    if stripped.startswith("{") and '"labels"' in text:
        try:
            doc = json.loads(text)
        except ValueError:
            doc = None
    if isinstance(doc, dict) and isinstance(doc.get("queries"), list):
        for q in doc["queries"]:
            relevant = {
                reg[lab["tool_id"]]: int(lab.get("relevance", 1))
                for lab in q.get("labels", [])
                if int(lab.get("relevance", 1)) >= 1 and lab.get("tool_id") in reg
            }
            out.append(BenchQuery(str(q.get("query", "")), relevant))
        return out
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as exc:
            raise CorpusError(f"{p}:{lineno} is not valid JSON: {exc}") from exc
        if not isinstance(row, dict) or "query" not in row:
            raise CorpusError(f"{p}:{lineno}: expected an object with query and expected")
        expected = row.get("expected") or []
        out.append(BenchQuery(str(row["query"]), {reg[e]: 1 for e in expected if e in reg}))
    return out


def score_ranking(ranked: list[str], relevant: dict[str, int]) -> dict[str, float]:
    """Per-query metrics of one ranked key list (see the module docstring for the definitions)."""
    out: dict[str, float] = {}
    for k in _KS:
        out[f"recall@{k}"] = sum(1 for key in ranked[:k] if key in relevant) / len(relevant)
    out["mrr"] = next((1 / (i + 1) for i, key in enumerate(ranked) if key in relevant), 0.0)
    dcg = sum(relevant.get(key, 0) / math.log2(i + 2) for i, key in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    out["ndcg@10"] = dcg / idcg if idcg else 0.0
    return out


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def run_search_bench(
    tools_path: str | Path,
    queries_path: str | Path,
    *,
    limit: int = 10,
    config: SearchConfig = DEFAULT,
) -> dict[str, Any]:
    """Build the index of a catalog, run every query, return quality, latency and size figures."""
    tools = load_catalog(tools_path)
    queries = load_queries(queries_path, tools)
    started = time.perf_counter()
    built = build_search_index(tools, config=config)
    build_s = time.perf_counter() - started

    doc_json = json.dumps(built.to_doc(), separators=(",", ":"))
    blob = zlib.compress(doc_json.encode("utf-8"), 6)
    started = time.perf_counter()
    parsed = json.loads(zlib.decompress(blob))
    mid = time.perf_counter()
    index = SearchIndex.from_doc(parsed)
    load_s = time.perf_counter() - mid
    blob_load_s = time.perf_counter() - started

    for q in queries[:_WARMUP]:
        index.search(q.text, limit=limit)
    latencies: list[float] = []
    totals = dict.fromkeys([f"recall@{k}" for k in _KS] + ["mrr", "ndcg@10"], 0.0)
    judged = 0
    for q in queries:
        started = time.perf_counter()
        hits = index.search(q.text, limit=limit)
        latencies.append((time.perf_counter() - started) * 1000)
        if not q.relevant:
            continue
        judged += 1
        for name, value in score_ranking([h.key for h in hits], q.relevant).items():
            totals[name] += value
    report: dict[str, Any] = {
        "tools_path": str(tools_path),
        "queries_path": str(queries_path),
        "tools": len(index),
        "servers": len({t.server for t in tools}),
        "queries": judged,
        "unjudged": len(queries) - judged,
        "limit": limit,
    }
    report.update({name: round(total / judged, 4) if judged else 0.0 for name, total in totals.items()})
    report.update(
        {
            "p50_ms": round(statistics.median(latencies), 3) if latencies else 0.0,
            "p95_ms": round(_percentile(latencies, 0.95), 3),
            "max_ms": round(max(latencies, default=0.0), 3),
            "build_s": round(build_s, 3),
            "index_json_bytes": len(doc_json),
            "index_zlib_bytes": len(blob),
            "load_ms": round(load_s * 1000, 2),
            "blob_load_ms": round(blob_load_s * 1000, 2),
        }
    )
    return report


def format_search_report(report: dict[str, Any]) -> str:
    """A human-readable summary of :func:`run_search_bench`'s report."""
    return "\n".join(
        [
            f"catalog {report['tools_path']}: {report['tools']} tools on {report['servers']} servers",
            f"queries {report['queries_path']}: {report['queries']} judged"
            + (
                f", {report['unjudged']} without a relevant tool in the catalog" if report["unjudged"] else ""
            ),
            f"Recall@1 {report['recall@1']:.3f} · Recall@5 {report['recall@5']:.3f} · "
            f"Recall@10 {report['recall@10']:.3f} · MRR {report['mrr']:.3f} · "
            f"nDCG@10 {report['ndcg@10']:.3f}",
            f"query latency p50 {report['p50_ms']:.2f} ms · p95 {report['p95_ms']:.2f} ms · "
            f"max {report['max_ms']:.2f} ms (limit {report['limit']})",
            f"index build {report['build_s']:.2f} s · serialised {report['index_json_bytes']:,} B JSON, "
            f"{report['index_zlib_bytes']:,} B zlib · load {report['load_ms']:.1f} ms "
            f"(with zlib + JSON parse {report['blob_load_ms']:.1f} ms)",
        ]
    )
