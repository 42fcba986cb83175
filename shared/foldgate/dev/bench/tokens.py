"""``foldgate bench tokens``: what each listing mode costs on a real catalog, in exact tokens.

Tokens are counted per entry (compact JSON of one ``tools/list`` entry) and summed, the method behind
mcpproxy's published figures, so both renderings can be compared on the same corpus. The ``grammar``
row sets signature grammar v1 (objects always ``~:obj``) beside v2 (small objects inline where that
makes a tool flat): flat share and deferred-listing tokens before and after, and what the newly flat
tools' describe round trips would have cost (their full entries).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from foldgate.config.policy import Plan, decide
from foldgate.config.tenant import TenantConfig
from foldgate.dev.corpus import load_catalog
from foldgate.model.jsonutil import compact
from foldgate.model.listing import deferred_entry, full_entry
from foldgate.model.signature import compile_signature
from foldgate.model.token_count import get_counter
from foldgate.model.tool import Tool

__all__ = ["format_token_report", "run_token_bench"]

LARGEST = 5


@dataclass(frozen=True, slots=True)
class _Rendering:
    name: str
    full: Callable[[Tool], str]
    deferred: Callable[[Tool], str]
    lossy: Callable[[Tool], bool]


def _ours() -> _Rendering:
    def full(t: Tool) -> str:
        return compact(full_entry(t, f"{t.server}__{t.name}"))

    def deferred(t: Tool) -> str:
        return compact(deferred_entry(t, f"{t.server}__{t.name}", t.signature))

    return _Rendering("foldgate", full, deferred, lambda t: t.signature.lossy)


def _mcpproxy() -> _Rendering:
    # Optional tokenizer packages load only for the bench that names them.
    from foldgate.dev.bench import mcpproxy_rendering as mp

    def full(t: Tool) -> str:
        return mp.render_full_entry(t.server, t.name, t.description, t.input_schema)

    def deferred(t: Tool) -> str:
        return mp.render_deferred_entry(t.server, t.name, t.description, t.input_schema)

    return _Rendering("mcpproxy", full, deferred, lambda t: "~" in mp.mcpproxy_signature(t.input_schema))


def _mode_report(plan: Plan, full_total: int, costs: dict[str, tuple[int, int]]) -> dict[str, Any]:
    tokens = plan.listing_tokens or 0
    reasons: dict[str, int] = {}
    for d in plan.decisions.values():
        reasons[d.label] = reasons.get(d.label, 0) + 1
    return {
        "tokens": tokens,
        "saving": round(1 - tokens / full_total, 4) if full_total else 0.0,
        "deferred_tools": plan.deferred_count,
        "decisions": dict(sorted(reasons.items())),
    }


def _search_surface(tools: list[Tool], count: Callable[[str], int], hits: int = 5) -> dict[str, Any]:
    """The search surface's fixed cost (its tools/list) plus a typical retrieve_tools answer: the
    envelope and ``hits`` compact hits of median size over the whole catalog."""
    # The serving modules load only for this figure, not for every token bench.
    from foldgate.model.catalog import IndexedTool
    from foldgate.serve.surfaces.call import call_surface_listing, hit_entry, retrieve_answer, text_result

    listing = count(call_surface_listing(TenantConfig().tools_limit))
    sizes = []
    for t in tools:
        sig = t.signature
        indexed = IndexedTool(f"{t.server}__{t.name}", t, sig.params, sig.lossy, "", "", 0, 0)
        sizes.append(count(compact(hit_entry(indexed, indexed.tier, 1, full=False))))
    envelope = count(compact(text_result(retrieve_answer([]))))
    median = int(statistics.median(sizes)) if sizes else 0
    # The hits appear once on the wire: retrieve_tools answers in JSON text only.
    response = envelope + hits * median
    return {"listing_tokens": listing, "hit_tokens_median": median, "retrieve_response_tokens": response,
            "first_search_total": listing + response}  # fmt: skip


def _grammar_row(
    tools: list[Tool], count: Callable[[str], int], full_tokens: dict[str, int]
) -> dict[str, Any]:
    """Grammar v1 beside v2 on the all-deferred listing: flat tools, listing tokens, describes avoided."""
    rows: dict[str, dict[str, Any]] = {}
    flat_by: dict[str, set[str]] = {}
    for label, inline in (("v1", False), ("v2", True)):
        tokens, flat = 0, set()
        for t in tools:
            sig = compile_signature(t.input_schema, inline=inline)
            tokens += count(compact(deferred_entry(t, f"{t.server}__{t.name}", sig)))
            if not sig.lossy:
                flat.add(t.key)
        flat_by[label] = flat
        share = round(len(flat) / len(tools), 4) if tools else 0.0
        rows[label] = {"flat": len(flat), "flat_share": share, "deferred_tokens": tokens}
    gained = flat_by["v2"] - flat_by["v1"]
    return {
        **rows,
        "inlined_tools": len(gained),
        "describe_tokens_avoided": sum(full_tokens[k] for k in gained),
    }


def run_token_bench(
    corpus: str | Path,
    *,
    tokenizer: str = "cl100k",
    mcpproxy_rendering: bool = False,
    budget: int | None = None,
) -> dict[str, Any]:
    """Measure full, deferred, auto and budgeted listings of a catalog; returns the report object."""
    tools = load_catalog(corpus)
    count = get_counter(tokenizer)
    rendering = _mcpproxy() if mcpproxy_rendering else _ours()

    started = time.perf_counter()
    for t in tools:
        compile_signature(t.input_schema)
    compile_s = time.perf_counter() - started

    costs: dict[str, tuple[int, int]] = {}
    for t in tools:
        costs[t.key] = (count(rendering.full(t)), count(rendering.deferred(t)))

    def cost(t: Tool) -> tuple[int, int]:
        return costs[t.key]

    base = TenantConfig()
    full_plan = decide(tools, base, mode="full", cost=cost)
    full_total = full_plan.listing_tokens or 0
    deferred_plan = decide(tools, base, mode="deferred", cost=cost)
    auto_plan = decide(tools, base, mode="auto", cost=cost)
    deferred_total = deferred_plan.listing_tokens or 0
    # Default budget: halfway between the all-deferred and the all-full listing.
    budget_value = budget if budget is not None else max(1, (full_total + deferred_total) // 2)
    budget_plan = decide(
        tools, base.model_copy(update={"listing_token_budget": budget_value}), mode="auto", cost=cost
    )
    non_lossy = sum(not rendering.lossy(t) for t in tools)
    largest = sorted(tools, key=lambda t: -costs[t.key][0])[:LARGEST]
    deferred_report = _mode_report(deferred_plan, full_total, costs)
    deferred_report["non_lossy"] = non_lossy
    deferred_report["non_lossy_share"] = round(non_lossy / len(tools), 4) if tools else 0.0
    budget_report = _mode_report(budget_plan, full_total, costs)
    budget_report["budget"] = budget_value
    budget_report["fits"] = budget_plan.fits_budget
    report: dict[str, Any] = {
        "search_surface": _search_surface(tools, count),
        "corpus": str(corpus),
        "tokenizer": tokenizer,
        "rendering": rendering.name,
        "tools": len(tools),
        "servers": len({t.server for t in tools}),
        "compile_us_per_tool": round(compile_s * 1e6 / len(tools), 2) if tools else 0.0,
        "modes": {
            "full": _mode_report(full_plan, full_total, costs),
            "deferred": deferred_report,
            "auto": _mode_report(auto_plan, full_total, costs),
            "budget": budget_report,
        },
        "largest": [
            {
                "id": f"{t.server}__{t.name}",
                "full_tokens": costs[t.key][0],
                "deferred_tokens": costs[t.key][1],
            }
            for t in largest
        ],
    }
    if not mcpproxy_rendering:
        report["grammar"] = _grammar_row(tools, count, {k: v[0] for k, v in costs.items()})
    return report


def format_token_report(report: dict[str, Any]) -> str:
    """A human-readable table of the report."""
    lines = [
        f"corpus {report['corpus']}: {report['tools']} tools on {report['servers']} servers; "
        f"tokenizer {report['tokenizer']}; rendering {report['rendering']}",
        f"{'mode':<10}{'tokens':>10}{'saving':>9}{'deferred':>10}  decisions",
    ]
    for mode, row in report["modes"].items():
        label = f"budget {row['budget']}" if mode == "budget" else mode
        decisions = ", ".join(f"{k} {v}" for k, v in row["decisions"].items())
        lines.append(
            f"{label:<10}{row['tokens']:>10,}{row['saving']:>9.1%}{row['deferred_tools']:>10}  {decisions}"
        )
    deferred = report["modes"]["deferred"]
    lines.append(
        f"signatures without ~: {deferred['non_lossy']}/{report['tools']} "
        f"({deferred['non_lossy_share']:.1%}); "
        f"compile {report['compile_us_per_tool']} us/tool"
    )
    grammar = report.get("grammar")
    if grammar is not None:
        v1, v2 = grammar["v1"], grammar["v2"]
        lines.append(
            f"grammar v1 → v2: flat {v1['flat']}/{report['tools']} ({v1['flat_share']:.1%}) → "
            f"{v2['flat']}/{report['tools']} ({v2['flat_share']:.1%}); deferred listing "
            f"{v1['deferred_tokens']:,} → {v2['deferred_tokens']:,} tokens "
            f"({v2['deferred_tokens'] - v1['deferred_tokens']:+,}) for {grammar['inlined_tools']} tools "
            f"callable without describe_tool (their full entries: {grammar['describe_tokens_avoided']:,})"
        )
    search = report["search_surface"]
    lines.append(
        f"search surface (/mcp/call): tools/list {search['listing_tokens']:,} tokens whatever the fleet; "
        f"a retrieve_tools answer with 5 compact hits ~{search['retrieve_response_tokens']:,} "
        f"(first search in all: {search['first_search_total']:,})"
    )
    lines.append("largest entries (full → deferred tokens):")
    for row in report["largest"]:
        lines.append(f"  {row['id']}: {row['full_tokens']:,} → {row['deferred_tokens']:,}")
    return "\n".join(lines)
