"""The poisoning side of ``foldgate bench scan`` as the indexer runs it now: rules, the lexical scorer
and the cue-and-vector scorer (:mod:`foldgate.guard.semantic`), against the wave-3 design (rules and
lexical scorer).

- held: the tool items of :mod:`foldgate.dev.guard_semantic_data`'s evaluation split by source
  (held-out generated templates, varied.jsonl's held-out multilingual groups, the hand-written
  ``attacks_eval.jsonl`` and ``handwritten_eval_tools.jsonl``, mcpproxy's security corpus): attacks
  held, honest look-alikes held;
- false positives on every real catalog of ``../shared/corpora`` (all tools), count and share, with
  the first few tools only the new scorer holds.

The vector head is used when the local search model is present (``make model``); otherwise the cue
head, and the report says which.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

from foldgate.dev.corpus import load_catalog_rows
from foldgate.dev.guard_data import CATALOGS, SECURITY, catalog_label
from foldgate.dev.guard_semantic_data import load_items
from foldgate.guard.poison_scan import scan_entry
from foldgate.guard.scorer import TextScorer, load_scorer, load_semantic

__all__ = ["format_semantic_scan", "run_semantic_scan"]

_SHOWN: Final = 5


def _encoder() -> tuple[Any, str]:
    # The search encoder loads here only: the bench measures what an indexer with `make model` runs.
    from foldgate.search.embed import EmbeddingError, LocalEmbedder

    try:
        return LocalEmbedder(), "vector head (local search encoder)"
    except EmbeddingError as exc:
        return None, f"cue head (no local encoder: {exc})"


def _held(entry: Any, scorer: TextScorer | None, semantic: TextScorer | None) -> tuple[bool, bool]:
    return bool(scan_entry(entry, scorer)), bool(scan_entry(entry, scorer, semantic))


def run_semantic_scan(corpora: Path, data: Path) -> dict[str, Any]:
    """The figures as one JSON-ready dict, or ``{"skipped": reason}``."""
    if not (corpora / SECURITY[0] / SECURITY[1]).is_file() or not (data / "varied.jsonl").is_file():
        return {"skipped": f"{corpora} or {data} is absent"}
    encoder, head = _encoder()
    scorer, semantic = load_scorer(), load_semantic(encoder)
    sources: dict[str, dict[str, int]] = {}
    for item in load_items(corpora, data):
        if item.kind != "tool" or item.split != "eval" or item.source == "catalog":
            continue
        before, after = _held(item.body, scorer, semantic)
        c = sources.setdefault(
            item.source, {"attacks": 0, "held": 0, "held_before": 0, "honest": 0, "false": 0}
        )
        if item.label:
            c["attacks"] += 1
            c["held"] += after
            c["held_before"] += before
        else:
            c["honest"] += 1
            c["false"] += after
    catalogs: list[dict[str, Any]] = []
    for folder, file in CATALOGS:
        rows = load_catalog_rows(corpora / folder / file)
        started = time.process_time()
        verdicts = [_held(row, scorer, semantic) for row in rows]
        new = [
            f"{r.get('server')}:{r.get('name')}"
            for r, (b, a) in zip(rows, verdicts, strict=True)
            if a and not b
        ]
        catalogs.append(
            {
                "catalog": catalog_label(folder, file),
                "tools": len(rows),
                "held": sum(a for _, a in verdicts),
                "held_before": sum(b for b, _ in verdicts),
                "new": new[:_SHOWN],
                "seconds": round(time.process_time() - started, 1),
            }
        )
    return {"head": head, "sources": sources, "catalogs": catalogs}


def format_semantic_scan(report: dict[str, Any]) -> str:
    """The report as text."""
    if "skipped" in report:
        return f"semantic scan: skipped: {report['skipped']}"
    lines = [f"scan as the indexer runs it (rules + lexical + cue scorer, {report['head']}):"]
    lines.append("  evaluation split and hand-written sets: attacks held (wave-3 design), honest held")
    for source, c in report["sources"].items():
        lines.append(
            f"    {source:<20} {c['held']:>4}/{c['attacks']:<4} ({c['held_before']:>4})   "
            f"honest {c['false']}/{c['honest']}"
        )
    lines.append("  real catalogs (all tools): held now (wave-3 design)")
    for c in report["catalogs"]:
        rate = 100 * c["held"] / max(1, c["tools"])
        lines.append(
            f"    {c['catalog']:<34} {c['tools']:>6} tools  {c['held']:>3} ({rate:.2f}%)"
            f"  ({c['held_before']})"
        )
        lines += [f"        new: {t}" for t in c["new"]]
    return "\n".join(lines)
