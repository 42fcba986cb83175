"""``foldgate bench scan`` without ``--tools``: the poisoning scan measured on the project's evaluation
split and on every real catalog, rules alone, model alone and both (what the indexer runs).

- evaluation split (:mod:`foldgate.dev.guard_data`, never tuned on): recall on its attacks per source
  (held-out generated templates, hand-written attacks, mcpproxy's security corpus) and precision over
  its attacks and honest tools;
- false positives on every real catalog of ``../shared/corpora``, all of its tools (training servers
  included: the figure an operator sees), count and share;
- scoring cost: thread CPU microseconds per ``score()`` of one 300-character passage of real
  descriptions, and the model file's size and load time.

Skips with a reason where ``../shared/corpora`` or ``tests/data/guard`` is absent.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Final

from foldgate.dev.corpus import load_catalog_rows
from foldgate.dev.guard_data import CATALOGS, SECURITY, Item, catalog_label, load_split
from foldgate.guard.poison_learned import learned_fields
from foldgate.guard.poison_scan import scan_entry
from foldgate.guard.scorer import TextScorer, load_scorer

__all__ = ["format_scan_eval", "run_scan_eval"]

_PASSAGE: Final = 300
_TIMED: Final = 2_000  # passages timed: enough for a stable median, a few seconds at most
_SIDES: Final = ("rules", "model", "both")


def _verdicts(entry: dict[str, Any], scorer: TextScorer | None) -> dict[str, bool]:
    rules = bool(scan_entry(entry))
    model = bool(learned_fields(entry, scorer)) if scorer is not None else False
    return {"rules": rules, "model": model, "both": rules or model}


def _side_figures(items: list[Item], verdicts: list[dict[str, bool]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for side in _SIDES:
        sources: dict[str, dict[str, int]] = {}
        for item, verdict in zip(items, verdicts, strict=True):
            counts = sources.setdefault(item.source, {"attacks": 0, "caught": 0, "honest": 0, "flagged": 0})
            if item.label:
                counts["attacks"] += 1
                counts["caught"] += verdict[side]
            else:
                counts["honest"] += 1
                counts["flagged"] += verdict[side]
        tp = sum(c["caught"] for c in sources.values())
        fp = sum(c["flagged"] for c in sources.values())
        attacks = sum(c["attacks"] for c in sources.values())
        out[side] = {
            "recall": tp / attacks if attacks else None,
            "precision": tp / (tp + fp) if tp + fp else None,
            "caught": tp,
            "attacks": attacks,
            "false_positives": fp,
            "honest": sum(c["honest"] for c in sources.values()),
            "sources": sources,
        }
    return out


def _cost(scorer: TextScorer, corpora: Path) -> dict[str, Any]:
    rows = load_catalog_rows(corpora / "mcp-flow" / "tools.jsonl")
    texts = [d[:_PASSAGE] for r in rows if len(d := str(r.get("description") or "")) >= _PASSAGE][:_TIMED]
    # Thread CPU time, not wall time: on a shared machine a wall clock times the neighbours too.
    samples: list[float] = []
    batch = time.thread_time_ns()
    for text in texts:
        started = time.thread_time_ns()
        scorer.score(text)
        samples.append((time.thread_time_ns() - started) / 1000)
    mean = (time.thread_time_ns() - batch) / 1000 / max(1, len(texts))
    samples.sort()
    return {
        "passages": len(samples),
        "chars": _PASSAGE,
        "us_mean": round(mean, 1),
        "us_median": round(statistics.median(samples), 1) if samples else None,
        "us_p95": round(samples[int(0.95 * (len(samples) - 1))], 1) if samples else None,
    }


def run_scan_eval(corpora: Path, data: Path) -> dict[str, Any]:
    """The figures as one JSON-ready dict, or ``{"skipped": reason}``."""
    if not (corpora / SECURITY[0] / SECURITY[1]).is_file():
        return {"skipped": f"{corpora} is absent (the team kit ../shared beside the checkout)"}
    if not (data / "attacks_eval.jsonl").is_file():
        return {"skipped": f"{data} is absent (a source checkout's tests/data/guard)"}
    started = time.perf_counter()
    load_scorer.cache_clear()  # the load is measured, not a cached one
    scorer = load_scorer()
    load_ms = (time.perf_counter() - started) * 1000
    report: dict[str, Any] = {"model": scorer is not None, "model_load_ms": round(load_ms, 1)}
    if scorer is not None:
        # Loaded on this path only: the model file's size is a packaging fact.
        from importlib import resources

        from foldgate.guard.scorer import MODEL_FILE

        data_dir = resources.files("foldgate.guard").joinpath("data", MODEL_FILE)
        report["model_bytes"] = len(data_dir.read_bytes())
        report["threshold"] = getattr(scorer, "threshold", None)
    items = load_split(corpora, data).items["eval"]
    report["evaluation"] = _side_figures(items, [_verdicts(item.entry, scorer) for item in items])
    catalogs: list[dict[str, Any]] = []
    for folder, file in CATALOGS:
        rows = load_catalog_rows(corpora / folder / file)
        t0 = time.process_time()
        verdicts = [_verdicts(row, scorer) for row in rows]
        seconds = time.process_time() - t0
        entry: dict[str, Any] = {
            "catalog": catalog_label(folder, file),
            "tools": len(rows),
            "scan_s": seconds,
        }
        for side in _SIDES:
            flagged = [
                f"{r.get('server')}:{r.get('name')}" for r, v in zip(rows, verdicts, strict=True) if v[side]
            ]
            entry[side] = {"flagged": len(flagged), "rate": len(flagged) / len(rows) if rows else 0.0}
            if side == "model":
                entry[side]["tools"] = flagged[:10]
        catalogs.append(entry)
    report["catalogs"] = catalogs
    if scorer is not None:
        report["cost"] = _cost(scorer, corpora)
    return report


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def format_scan_eval(report: dict[str, Any]) -> str:
    """A human-readable summary of :func:`run_scan_eval`."""
    if "skipped" in report:
        return f"skipped: {report['skipped']}"
    lines = []
    if report["model"]:
        lines.append(
            f"model: {report['model_bytes']:,} bytes, threshold {report['threshold']}, "
            f"loaded in {report['model_load_ms']:.0f} ms"
        )
    else:
        lines.append("model: absent (rules alone)")
    ev = report["evaluation"]
    lines.append("evaluation split (never tuned on): recall / precision")
    for side in _SIDES:
        f = ev[side]
        lines.append(
            f"  {side:<6} recall {_pct(f['recall'])} ({f['caught']}/{f['attacks']})  precision "
            f"{_pct(f['precision'])}  false positives {f['false_positives']}/{f['honest']}"
        )
    lines.append("  recall by source        rules   model   both")
    for source, counts in ev["both"]["sources"].items():
        if counts["attacks"]:
            cells = "  ".join(
                f"{ev[side]['sources'][source]['caught']:>3}/{counts['attacks']:<3}" for side in _SIDES
            )
            lines.append(f"  {source:<22} {cells}")
    lines.append("false positives on every real catalog (all tools)     rules          model          both")
    for c in report["catalogs"]:
        cells = "  ".join(f"{c[s]['flagged']:>4} ({100 * c[s]['rate']:.2f}%)" for s in _SIDES)
        lines.append(f"  {c['catalog']:<34} {c['tools']:>6} tools  {cells}")
        lines += [f"      model: {t}" for t in c["model"]["tools"]]
    if "cost" in report:
        cost = report["cost"]
        lines.append(
            f"scoring cost (thread CPU): {cost['us_mean']} us mean, {cost['us_median']} us median, "
            f"{cost['us_p95']} us p95 per {cost['chars']}-char passage ({cost['passages']} real passages)"
        )
    return "\n".join(lines)
