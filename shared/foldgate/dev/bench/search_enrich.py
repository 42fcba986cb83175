"""``foldgate bench search --enrich PROVIDER``: search quality without and with index-time enrichment.

The catalog is enriched by the indexer's own pass (:class:`foldgate.enrich.pipeline.EnrichmentPass`,
neighbours, validation) and searched twice, without and with the enrichment, with every other
setting equal; the two reports and their differences are printed, with what the provider spent
(tokens in/out, tokens per second, wall time per 100 tools).

Model output is slow to make (minutes per hundred tools on this machine's CPU), so it is kept in a
cache file (``--enrich-cache``, e.g. ``.tuning/enrichment.json``): content hash → provider source →
enrichment. A later run over the same corpus reuses it and calls the provider only for tools it has
no answer for; ``--enrich cache`` calls no provider at all and searches with what the cache holds.
"""

from __future__ import annotations

import asyncio
import importlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from foldgate.dev.bench.search import run_search_bench
from foldgate.dev.corpus import load_catalog
from foldgate.enrich.base import EnrichmentError, EnrichmentProvider, EnrichmentRequest, RawEnrichment
from foldgate.enrich.pipeline import EnrichmentCaps, EnrichmentPass
from foldgate.errors import CorpusError
from foldgate.model.enrichment import Enrichment

__all__ = [
    "CacheOnly",
    "EnrichmentCache",
    "format_enriched_report",
    "open_bench_provider",
    "run_enriched_search_bench",
]

_FORMAT = 1
# The figures compared without and with enrichment.
_COMPARED = ("recall@1", "recall@5", "recall@10", "mrr", "ndcg@10", "all@5", "all@10")


class EnrichmentCache:
    """A JSON file of enrichments: content hash → provider source → stored enrichment document."""

    def __init__(self, path: str | Path | None) -> None:
        self.path = Path(path) if path else None
        self.entries: dict[str, dict[str, dict[str, Any]]] = {}
        if self.path is not None and self.path.is_file():
            try:
                doc = json.loads(self.path.read_text(encoding="utf-8"))
            except (OSError, ValueError) as exc:
                raise CorpusError(f"cannot read the enrichment cache {self.path}: {exc}") from exc
            if isinstance(doc, dict) and doc.get("v") == _FORMAT and isinstance(doc.get("entries"), dict):
                self.entries = doc["entries"]

    def sources(self) -> list[str]:
        """Every provider source with an answer in the cache."""
        return sorted({s for by_source in self.entries.values() for s in by_source})

    def for_source(self, source: str | None) -> dict[str, Enrichment]:
        """Content hash → enrichment made by ``source`` (None: by any source, the first one kept)."""
        out: dict[str, Enrichment] = {}
        for digest, by_source in self.entries.items():
            for src, doc in sorted(by_source.items()):
                if source is None or src == source:
                    out.setdefault(digest, Enrichment.from_doc(doc))
        return out

    def add(self, enrichments: Mapping[str, Enrichment]) -> int:
        """Store new answers (by canonical key, as the pass returns them); how many were new."""
        added = 0
        for e in enrichments.values():
            by_source = self.entries.setdefault(e.content_hash, {})
            if e.source not in by_source:
                by_source[e.source] = e.to_doc()
                added += 1
        return added

    def save(self) -> None:
        """Write the file (nothing without a path)."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        doc = {"v": _FORMAT, "entries": self.entries}
        self.path.write_text(json.dumps(doc, separators=(",", ":"), sort_keys=True), encoding="utf-8")


class CacheOnly(EnrichmentProvider):
    """``--enrich cache``: answers nothing, so a run uses exactly what the cache holds."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        """Every tool the cache lacks stays un-enriched."""
        raise EnrichmentError(f"{request.key}: not in the enrichment cache")


def open_bench_provider(name: str, cache: EnrichmentCache, model: str | None = None) -> EnrichmentProvider:
    """The provider ``--enrich`` names: ``cache`` (the cache's answers only, of ``model`` as a source
    when given, else of its only source), or ``local`` / ``openai`` / ``bedrock`` configured from
    FOLDGATE_ENRICHMENT_* like the indexer (``model`` overriding the model)."""
    if name == "cache":
        sources = cache.sources()
        if model is None and len(sources) != 1:
            raise CorpusError(f"--enrich cache needs --enrich-model, one of: {', '.join(sources) or 'none'}")
        return CacheOnly(model or sources[0])
    # The providers and their clients (llama-cpp-python, boto3, an HTTP client) load only when asked.
    settings_mod = importlib.import_module("foldgate.config.enrichment")
    providers = importlib.import_module("foldgate.enrich.providers")
    settings = settings_mod.EnrichmentSettings.from_env()
    changes: dict[str, Any] = {"provider": name} | ({"model": model} if model else {})
    provider: EnrichmentProvider = providers.provider_for(settings.model_copy(update=changes))
    return provider


def _enrich(
    tools_path: str | Path, provider: EnrichmentProvider, cache: EnrichmentCache, caps: EnrichmentCaps
) -> tuple[dict[str, Enrichment], dict[str, Any]]:
    tools = load_catalog(tools_path)
    source = None if isinstance(provider, CacheOnly) else provider.source
    enrichment = EnrichmentPass(provider, caps)
    found, report = asyncio.run(enrichment.run(tools, None, cached=cache.for_source(source)))
    new = cache.add(found)
    cache.save()
    usage = report.to_doc()
    out = report.tokens_out
    usage["tokens_out_per_s"] = round(out / report.seconds, 2) if report.seconds and out else 0.0
    usage["cached_new"] = new
    return found, usage


def run_enriched_search_bench(
    tools_path: str | Path,
    queries_path: str | Path,
    provider: EnrichmentProvider,
    *,
    cache_path: str | Path | None = None,
    caps: EnrichmentCaps | None = None,
    dense_cache: str | Path | None = None,
    bench: Callable[..., dict[str, Any]] = run_search_bench,
    **options: Any,
) -> dict[str, Any]:
    """Enrich the catalog (cache first), then :func:`run_search_bench` without and with enrichment.

    ``options`` go to both runs unchanged (engine, weight, config, ...). With ``dense_cache`` the
    enriched run keeps its vectors in a sibling file (``….enriched.json``), so neither run re-encodes
    the other's tools next time.
    """
    cache = EnrichmentCache(cache_path)
    # One tool at a time unless told otherwise: a local model already uses every core. No wall-time
    # cap: a corpus is enriched once, then read from the cache.
    unbounded = EnrichmentCaps(max_tools=1_000_000, max_seconds=7 * 86400, concurrency=1)
    found, usage = _enrich(tools_path, provider, cache, caps or unbounded)
    enriched_cache = None
    if dense_cache is not None:
        p = Path(dense_cache)
        enriched_cache = p.with_name(f"{p.stem}.enriched{p.suffix or '.json'}")
    without = bench(tools_path, queries_path, dense_cache=dense_cache, **options)
    with_ = bench(tools_path, queries_path, dense_cache=enriched_cache, enrichments=found, **options)
    return {
        "without": without,
        "with": with_,
        "enriched_tools": len(found),
        "enrichment": usage,
        "delta": {k: round(with_[k] - without[k], 4) for k in _COMPARED if k in with_ and k in without},
    }


def format_enriched_report(report: dict[str, Any], format_one: Callable[[dict[str, Any]], str]) -> str:
    """Both runs (each as ``format_one`` prints it), the differences and the provider's spend."""
    usage = report["enrichment"]
    delta = " · ".join(f"{k} {v:+.3f}" for k, v in report["delta"].items())
    return "\n".join(
        [
            "without enrichment:",
            format_one(report["without"]),
            "",
            f"with enrichment ({report['enriched_tools']} of {usage['tools']} tools enriched, "
            f"source {usage['source']}):",
            format_one(report["with"]),
            "",
            f"difference (with - without): {delta}",
            f"enrichment run: {usage['enriched']} new, {usage['reused']} from the cache "
            f"({usage['cached_new']} added to it), {usage['failed']} failed, {usage['deferred']} deferred · "
            f"tokens in {usage['tokens_in']:,} / out {usage['tokens_out']:,} · "
            f"{usage['tokens_out_per_s']:.1f} tokens out/s · {usage['seconds']:.1f} s, "
            f"{usage['seconds_per_100_tools']:.1f} s per 100 tools",
        ]
        + ([f"first errors: {'; '.join(usage['errors'])}"] if usage["errors"] else [])
    )
