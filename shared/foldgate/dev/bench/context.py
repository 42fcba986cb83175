"""``foldgate bench context``: the context tokens an agent spends to reach a task's tools, per surface.

For every task of a query file (``{"query", "expected": [...]}`` lines, or mcpproxy's golden JSON) over a
catalog, three ways for an agent to get from nothing to "I can call every tool this task needs":

- **full listing**: ``tools/list`` with every schema; every tool is reached, the cost is the listing;
- **deferred listing**: the compact listing, plus one ``describe_tool`` answer for each of the task's
  tools whose signature is lossy (the agent needs the real schema before calling it);
- **search surface** (``retrieve_tools``): the surface's small ``tools/list``, one ``retrieve_tools``
  answer for the task text at each ``--limit`` (as the gateway renders it: compact hits plus the
  per-need ``intents`` of a multi-need request); the describes of reached tools whose hit is lossy
  (lossy or cut signature) are reported apart. A task counts as reached when all of its tools are
  on that one answer.

Also printed per ``--limit``: the tokens of the first page of browsing without a query
(``retrieve_tools`` with an empty query: every tool grouped by server, ``limit`` tools a page), the
same for every task.

Tokens are exact (cl100k by default) over the compact JSON that goes on the wire (the answer is built
by the surface's own functions, so the bench and the gateway cannot drift apart). Printed per task set:
the mean tokens per task on each surface and the share of tasks whose tools were all reached.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from foldgate.config.policy import decide
from foldgate.config.tenant import TenantConfig
from foldgate.dev.bench.search import Engine, load_queries
from foldgate.dev.corpus import load_catalog
from foldgate.model.jsonutil import compact
from foldgate.model.listing import deferred_entry, full_entry
from foldgate.model.token_count import TokenCounter, get_counter
from foldgate.model.tool import Tool
from foldgate.search import build_search_index
from foldgate.search.multi import MultiIntentSearcher, Searcher

__all__ = ["DEFAULT_LIMITS", "format_context_report", "run_context_bench"]

DEFAULT_LIMITS = (5, 10, 20, 30, 40, 50, 60)


def _published(tool: Tool) -> str:
    return f"{tool.server}__{tool.name}"


def _indexed(tool: Tool) -> Any:
    """The tool as the gateway serves it (published name, signature, lossiness)."""
    # Loaded only for the part of this bench that needs it (the dense stack is heavy).
    from foldgate.model.catalog import IndexedTool

    sig = tool.signature
    return IndexedTool(_published(tool), tool, sig.params, sig.lossy, "", "", 0, 0)


def _searcher(
    tools: list[Tool], engine: Engine, model_dir: str | Path | None, dense_cache: str | Path | None
) -> Searcher:
    """The served search stack for this catalog: lexical or hybrid, behind the multi-intent wrapper."""
    lexical = build_search_index(tools)
    if engine == "lexical":
        return MultiIntentSearcher(lexical)
    # Loaded only for the part of this bench that needs it (the dense stack is heavy).
    import json

    from foldgate.search.dense import DenseIndex, build_dense_index
    from foldgate.search.embed import EmbeddingError, LocalEmbedder
    from foldgate.search.hybrid import DEFAULT_WEIGHT, HybridSearcher

    provider = LocalEmbedder(model_dir)
    cache = Path(dense_cache) if dense_cache else None
    reuse: dict[str, Any] = {}
    if cache is not None and cache.is_file():
        reuse = DenseIndex.from_doc(json.loads(cache.read_text(encoding="utf-8"))).reusable_for(provider)
    dense = build_dense_index(provider, tools, reuse)
    if dense is None:
        raise EmbeddingError(f"the {engine} engine needs an embedding provider, got {provider.name}")
    if cache is not None:
        cache.write_text(json.dumps(dense.to_doc(), separators=(",", ":")), encoding="utf-8")
    weight = 1.0 if engine == "dense" else DEFAULT_WEIGHT
    return MultiIntentSearcher(HybridSearcher(lexical, dense, provider, weight=weight))


class _Costs:
    """Token costs of the pieces of every surface, each counted once per tool."""

    def __init__(self, tools: list[Tool], count: TokenCounter) -> None:
        # Loaded only for the part of this bench that needs it (the dense stack is heavy).
        from foldgate.serve.surfaces.call import call_surface_listing

        self.count = count
        self.by_key = {t.key: t for t in tools}
        self._indexed = {t.key: _indexed(t) for t in tools}
        self._describe: dict[str, int] = {}
        per_tool = {
            t.key: (
                count(compact(full_entry(t, _published(t)))),
                count(compact(deferred_entry(t, _published(t), t.signature))),
            )
            for t in tools
        }

        def cost(t: Tool) -> tuple[int, int]:
            return per_tool[t.key]

        base = TenantConfig()
        self.full = decide(tools, base, mode="full", cost=cost).listing_tokens or 0
        self.deferred = decide(tools, base, mode="deferred", cost=cost).listing_tokens or 0
        self.surface = count(call_surface_listing(base.tools_limit))

    def lossy(self, key: str) -> bool:
        """Whether the tool's listed signature is lossy (the deferred listing shows it whole)."""
        return bool(self._indexed[key].lossy)

    def hit_lossy(self, key: str, rank: int) -> bool:
        """Whether an agent must describe this tool before calling it from a compact hit at ``rank``."""
        # Loaded only for the part of this bench that needs it (the serving modules are heavy).
        from foldgate.serve.surfaces.call import needs_describe

        return needs_describe(self._indexed[key], rank)

    def describe(self, key: str) -> int:
        """Tokens of one describe_tool answer for this tool (the gateway's exact body)."""
        cached = self._describe.get(key)
        if cached is None:
            # The serving modules load only when this bench counts an answer.
            from foldgate.serve.results import json_result
            from foldgate.serve.surfaces.describe import tool_definition

            body = {"tools": [tool_definition(self._indexed[key])]}
            cached = self._describe[key] = self.count(compact(json_result(body)))
        return cached

    def retrieve(self, query: str, searcher: Searcher, limit: int) -> tuple[int, dict[str, int]]:
        """Tokens of the retrieve_tools answer for ``query`` and the rank of each key it returned."""
        # The serving modules load only when this bench counts an answer.
        from foldgate.search.multi import intent_ranks, search_with_intents
        from foldgate.serve.surfaces.call import page_entries, retrieve_answer, text_result

        hits, groups = search_with_intents(searcher, query, limit=limit)
        entries, more = page_entries([self._indexed[h.key] for h in hits], lambda t: t.tier, full=False)
        body = retrieve_answer(entries, intent_ranks(hits, groups) if groups else None, more)
        return self.count(compact(text_result(body))), {h.key: rank for rank, h in enumerate(hits, 1)}

    def browse_first_page(self, limit: int) -> int:
        """Tokens of the first browse page (retrieve_tools without a query) at ``limit`` tools."""
        # The serving modules load only when this bench counts an answer.
        from foldgate.serve.browse import browse_answer
        from foldgate.serve.surfaces.call import page_entries, text_result

        tools = list(self._indexed.values())
        order = list(dict.fromkeys(t.server for t in tools))
        body = browse_answer(
            tools,
            order,
            lambda t: t.tier,
            lambda page: page_entries(page, lambda t: t.tier, full=False),
            offset=0,
            limit=limit,
        )
        return self.count(compact(text_result(body)))


def run_context_bench(
    tools_path: str | Path,
    queries_path: str | Path,
    *,
    limits: Sequence[int] = DEFAULT_LIMITS,
    engine: Engine = "hybrid",
    tokenizer: str = "cl100k",
    model_dir: str | Path | None = None,
    dense_cache: str | Path | None = None,
) -> dict[str, Any]:
    """Per-task context cost of each surface and the share of tasks whose tools were all reached."""
    tools = load_catalog(tools_path)
    tasks = [q for q in load_queries(queries_path, tools) if q.relevant]
    costs = _Costs(tools, get_counter(tokenizer))
    searcher = _searcher(tools, engine, model_dir, dense_cache)
    deferred = [costs.deferred + sum(costs.describe(k) for k in q.relevant if costs.lossy(k)) for q in tasks]
    search_rows: list[dict[str, Any]] = []
    for limit in limits:
        spent: list[int] = []
        described: list[int] = []
        reached = 0
        started = time.perf_counter()
        for q in tasks:
            answer, keys = costs.retrieve(q.text, searcher, limit)
            describes = sum(
                costs.describe(k) for k in q.relevant if k in keys and costs.hit_lossy(k, keys[k])
            )
            spent.append(costs.surface + answer)
            described.append(describes)
            reached += all(k in keys for k in q.relevant)
        search_rows.append(
            {
                "limit": limit,
                "tokens_mean": round(statistics.fmean(spent), 1) if spent else 0.0,
                "tokens_p95": sorted(spent)[max(0, int(0.95 * len(spent)) - 1)] if spent else 0,
                "describe_tokens_mean": round(statistics.fmean(described), 1) if described else 0.0,
                "reached_share": round(reached / len(tasks), 4) if tasks else 0.0,
                "search_s": round(time.perf_counter() - started, 2),
                "browse_first_page_tokens": costs.browse_first_page(limit),
            }
        )
    return {
        "tools_path": str(tools_path),
        "queries_path": str(queries_path),
        "tools": len(tools),
        "tasks": len(tasks),
        "tools_per_task": round(statistics.fmean(len(q.relevant) for q in tasks), 2) if tasks else 0.0,
        "engine": engine,
        "tokenizer": tokenizer,
        "full_listing_tokens": costs.full,
        "deferred_tokens_mean": round(statistics.fmean(deferred), 1) if deferred else 0.0,
        "surface_listing_tokens": costs.surface,
        "search": search_rows,
    }


def format_context_report(report: dict[str, Any]) -> str:
    """A human-readable summary of :func:`run_context_bench`'s report."""
    lines = [
        f"catalog {report['tools_path']}: {report['tools']} tools; tasks {report['queries_path']}: "
        f"{report['tasks']} ({report['tools_per_task']:.2f} tools per task), engine {report['engine']}, "
        f"{report['tokenizer']} tokens",
        f"full listing     {report['full_listing_tokens']:>9,} tokens per task · all tools reached",
        f"deferred listing {report['deferred_tokens_mean']:>9,.0f} tokens per task (+ describes of lossy "
        "tools) · all tools reached",
    ]
    for row in report["search"]:
        lines.append(
            f"search surface   {row['tokens_mean']:>9,.0f} tokens per task (listing "
            f"{report['surface_listing_tokens']:,} + one retrieve_tools answer at limit {row['limit']}; p95 "
            f"{row['tokens_p95']:,}) + {row['describe_tokens_mean']:,.0f} in describes · all tools "
            f"reached in {100 * row['reached_share']:.1f}% of tasks"
        )
    for row in report["search"]:
        lines.append(
            f"browse (no query) first page at limit {row['limit']}: "
            f"{row['browse_first_page_tokens']:,} tokens"
        )
    return "\n".join(lines)
