"""``foldgate bench search``: retrieval quality and latency of tool search on a real catalog.

Engines (``--engine``): ``lexical`` (BM25F, the default), ``dense`` (the local embedding model alone)
and ``hybrid`` (both, fused with ``--weight``; see foldgate.search.hybrid).

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
- ``cpu_p50_ms`` / ``cpu_p95_ms``: the process's CPU time during one search call (every thread:
  the encode pool's, a BLAS library's own threads), which a busy shared machine inflates less than
  wall time;
- ``p50_ms`` / ``p95_ms``: wall time of one search call on the index as the request path has it
  (after ``to_doc`` → zlib → ``from_doc``), one run per query after a short warm-up; for the dense
  engines that is the whole query: encode + dot products + fusion + page.

Build time, the serialised size (JSON and zlib) and the load time are printed too. The dense engines
add the encoder's cold load (imports + session), the query encode time alone (p50/p95), the dense
index's build time, size and load time, and the unzipped size of the search stack as deployed
(numpy + onnxruntime + tokenizers as installed here, plus the model files).
"""

from __future__ import annotations

import json
import math
import statistics
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from foldgate.dev.corpus import load_catalog
from foldgate.errors import CorpusError
from foldgate.model.enrichment import Enrichment
from foldgate.model.tool import Tool
from foldgate.search import DEFAULT, SearchConfig, SearchHit, SearchIndex, build_search_index
from foldgate.search.dense import DenseIndex, build_dense_index
from foldgate.search.embed import Embedder, EmbeddingError, LocalEmbedder
from foldgate.search.hybrid import DEFAULT_WEIGHT, HybridSearcher
from foldgate.search.multi import MultiIntentSearcher, Searcher

Engine = Literal["lexical", "dense", "hybrid"]
ENGINES: tuple[Engine, ...] = ("lexical", "dense", "hybrid")
# What the dense engines add to a deployment (besides foldgate itself and the model files).
STACK_DISTRIBUTIONS = ("numpy", "onnxruntime", "tokenizers")
MB = 1024 * 1024

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
    # All of a query's tools on the page: what a multi-need task needs to proceed without a second search.
    out["all@5"] = float(all(key in ranked[:5] for key in relevant))
    out["all@10"] = float(all(key in ranked[:10] for key in relevant))
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


def stack_bytes(distributions: tuple[str, ...] = STACK_DISTRIBUTIONS, model_dir: Path | None = None) -> int:
    """Unzipped bytes of the installed distributions' files (RECORD) plus the model directory's files."""
    total = 0
    for dist in distributions:
        try:
            files = metadata.distribution(dist).files or []
        except metadata.PackageNotFoundError:
            continue
        for f in files:
            path = Path(str(f.locate()))
            if path.is_file():
                total += path.stat().st_size
    if model_dir is not None and model_dir.is_dir():
        total += sum(p.stat().st_size for p in model_dir.iterdir() if p.is_file())
    return total


def _dense_side(
    tools: list[Tool],
    index: SearchIndex,
    queries: list[BenchQuery],
    *,
    engine: Engine,
    weight: float,
    model_dir: str | Path | None,
    provider: Embedder | None,
    dense_cache: str | Path | None,
    enrichments: Mapping[str, Enrichment] | None = None,
) -> tuple[HybridSearcher, dict[str, Any]]:
    """Open the encoder, build + serialise + reload the dense index, time query encoding alone."""
    started = time.perf_counter()
    if provider is None:
        provider = LocalEmbedder(model_dir)
    load_s = time.perf_counter() - started
    cache = Path(dense_cache) if dense_cache else None
    reuse: dict[str, Any] = {}
    if cache is not None and cache.is_file():
        reuse = DenseIndex.from_doc(json.loads(cache.read_text(encoding="utf-8"))).reusable_for(provider)
    started = time.perf_counter()
    built = build_dense_index(provider, tools, reuse, enrichments=enrichments)
    build_s = time.perf_counter() - started
    if built is None:
        raise EmbeddingError(f"the {engine} engine needs an embedding provider, got {provider.name}")
    doc_json = json.dumps(built.to_doc(), separators=(",", ":"))
    if cache is not None:
        cache.write_text(doc_json, encoding="utf-8")
    blob = zlib.compress(doc_json.encode("utf-8"), 6)
    started = time.perf_counter()
    dense = DenseIndex.from_doc(json.loads(zlib.decompress(blob)))
    searcher = HybridSearcher(index, dense, provider, weight=1.0 if engine == "dense" else weight)
    dense_load_s = time.perf_counter() - started

    for q in queries[:_WARMUP]:
        provider.encode(q.text)
    encode_ms: list[float] = []
    for q in queries:
        started = time.perf_counter()
        provider.encode(q.text)
        encode_ms.append((time.perf_counter() - started) * 1000)
    model_path = getattr(provider, "model_dir", None)
    figures: dict[str, Any] = {
        "weight": searcher.weight,
        "provider": provider.name,
        "model_id": provider.model_id,
        "encoder_load_ms": round(getattr(provider, "load_seconds", load_s) * 1000, 1),
        "encode_p50_ms": round(statistics.median(encode_ms), 3) if encode_ms else 0.0,
        "encode_p95_ms": round(_percentile(encode_ms, 0.95), 3),
        "dense_build_s": round(build_s, 3),
        "dense_encoded": built.encoded,
        "dense_reused": built.reused,
        "dense_json_bytes": len(doc_json),
        "dense_zlib_bytes": len(blob),
        "dense_load_ms": round(dense_load_s * 1000, 2),
        "search_stack_mb": round(stack_bytes(model_dir=Path(model_path) if model_path else None) / MB, 1),
    }
    return searcher, figures


def run_search_bench(
    tools_path: str | Path,
    queries_path: str | Path,
    *,
    limit: int = 10,
    config: SearchConfig = DEFAULT,
    engine: Engine = "lexical",
    weight: float = DEFAULT_WEIGHT,
    model_dir: str | Path | None = None,
    provider: Embedder | None = None,
    dense_cache: str | Path | None = None,
    multi_intent: bool = True,
    enrichments: Mapping[str, Enrichment] | None = None,
    breakdown: bool = False,
) -> dict[str, Any]:
    """Build the index of a catalog, run every query, return quality, latency and size figures.

    ``engine`` ``dense``/``hybrid`` opens the local model from ``model_dir`` (default: where ``make
    model`` puts it) unless a ``provider`` is given, and raises EmbeddingError when it cannot.
    ``dense_cache`` (a JSON file) keeps the tool vectors between runs: unchanged tools are reused.
    ``multi_intent`` (as served) splits multi-need queries and fuses per-need searches.
    ``enrichments`` (by canonical key) fill the hint and queries fields and the dense text, as the
    indexer stores them (:mod:`foldgate.dev.bench.search_enrich` makes them).
    ``breakdown`` adds a second pass timing each stage (:mod:`foldgate.dev.bench.search_stages`).
    """
    if engine not in ENGINES:
        raise CorpusError(f"unknown search engine {engine!r}: one of {', '.join(ENGINES)}")
    tools = load_catalog(tools_path)
    queries = load_queries(queries_path, tools)
    started = time.perf_counter()
    built = build_search_index(tools, config=config, enrichments=enrichments)
    build_s = time.perf_counter() - started

    doc_json = json.dumps(built.to_doc(), separators=(",", ":"))
    blob = zlib.compress(doc_json.encode("utf-8"), 6)
    started = time.perf_counter()
    parsed = json.loads(zlib.decompress(blob))
    mid = time.perf_counter()
    index = SearchIndex.from_doc(parsed)
    load_s = time.perf_counter() - mid
    blob_load_s = time.perf_counter() - started

    searcher: Searcher = index
    dense_figures: dict[str, Any] = {}
    if engine != "lexical":
        searcher, dense_figures = _dense_side(
            tools,
            index,
            queries,
            engine=engine,
            weight=weight,
            model_dir=model_dir,
            provider=provider,
            dense_cache=dense_cache,
            enrichments=enrichments,
        )
    # The served stack: the searcher itself (not a bound method), so that the multi-intent wrapper
    # uses its batched path for the needs of one request as the gateway does.
    search: Callable[..., list[SearchHit]] = (
        MultiIntentSearcher(searcher).search if multi_intent else searcher.search
    )

    for q in queries[:_WARMUP]:
        search(q.text, limit=limit)
    latencies: list[float] = []
    totals = dict.fromkeys([f"recall@{k}" for k in _KS] + ["all@5", "all@10", "mrr", "ndcg@10"], 0.0)
    judged = 0
    cpu: list[float] = []
    for q in queries:
        cpu_started = time.process_time()
        started = time.perf_counter()
        hits = search(q.text, limit=limit)
        latencies.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
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
        "engine": engine,
        "multi_intent": multi_intent,
    }
    report.update({name: round(total / judged, 4) if judged else 0.0 for name, total in totals.items()})
    report.update(
        {
            "p50_ms": round(statistics.median(latencies), 3) if latencies else 0.0,
            "p95_ms": round(_percentile(latencies, 0.95), 3),
            "max_ms": round(max(latencies, default=0.0), 3),
            "cpu_p50_ms": round(statistics.median(cpu), 3) if cpu else 0.0,
            "cpu_p95_ms": round(_percentile(cpu, 0.95), 3),
            "build_s": round(build_s, 3),
            "index_json_bytes": len(doc_json),
            "index_zlib_bytes": len(blob),
            "load_ms": round(load_s * 1000, 2),
            "blob_load_ms": round(blob_load_s * 1000, 2),
        }
    )
    report.update(dense_figures)
    if breakdown:
        # Loaded only when asked: the stage clock wraps the served objects for a second pass.
        from foldgate.dev.bench.search_stages import run_breakdown

        report["breakdown"] = run_breakdown(
            search,
            [q.text for q in queries],
            limit=limit,
            provider=getattr(searcher, "provider", None),
            lexical=index,
            cosines=getattr(searcher, "cosines", None),
        )
    return report


def format_search_report(report: dict[str, Any]) -> str:
    """A human-readable summary of :func:`run_search_bench`'s report."""
    lines = [
        f"catalog {report['tools_path']}: {report['tools']} tools on {report['servers']} servers",
        f"queries {report['queries_path']}: {report['queries']} judged"
        + (f", {report['unjudged']} without a relevant tool in the catalog" if report["unjudged"] else ""),
        f"Recall@1 {report['recall@1']:.3f} · Recall@5 {report['recall@5']:.3f} · "
        f"Recall@10 {report['recall@10']:.3f} · MRR {report['mrr']:.3f} · "
        f"nDCG@10 {report['ndcg@10']:.3f} · all tools in top 5 {report['all@5']:.3f}, "
        f"top 10 {report['all@10']:.3f}" + ("" if report.get("multi_intent", True) else " (single-intent)"),
        f"query latency p50 {report['p50_ms']:.2f} ms · p95 {report['p95_ms']:.2f} ms · "
        f"max {report['max_ms']:.2f} ms (limit {report['limit']}) · CPU p50 {report['cpu_p50_ms']:.2f} ms "
        f"· p95 {report['cpu_p95_ms']:.2f} ms",
        f"index build {report['build_s']:.2f} s · serialised {report['index_json_bytes']:,} B JSON, "
        f"{report['index_zlib_bytes']:,} B zlib · load {report['load_ms']:.1f} ms "
        f"(with zlib + JSON parse {report['blob_load_ms']:.1f} ms)",
    ]
    engine = report.get("engine", "lexical")
    if engine != "lexical":
        lines[2:2] = [f"engine {engine} (dense weight {report['weight']:.2f}, model {report['model_id']})"]
        lines += [
            f"encoder cold load {report['encoder_load_ms']:.0f} ms · query encode p50 "
            f"{report['encode_p50_ms']:.2f} ms · p95 {report['encode_p95_ms']:.2f} ms",
            f"dense index build {report['dense_build_s']:.2f} s ({report['dense_encoded']} encoded, "
            f"{report['dense_reused']} reused) · {report['dense_json_bytes']:,} B JSON, "
            f"{report['dense_zlib_bytes']:,} B zlib · load {report['dense_load_ms']:.1f} ms",
            f"search stack unzipped {report['search_stack_mb']:.1f} MB "
            "(numpy + onnxruntime + tokenizers + model)",
        ]
    if "breakdown" in report:
        # Loaded only when asked: the stage table's formatter.
        from foldgate.dev.bench.search_stages import format_breakdown

        lines.append(format_breakdown(report["breakdown"]))
    return "\n".join(lines)
