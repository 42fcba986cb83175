"""``foldgate bench scan``: what the tool-poisoning scan flags on a catalog, and how fast.

``--tools`` is a catalog (``tools.jsonl``, a corpus folder or an mcpproxy JSON file): every tool is
scanned as published and the flagged share is the false-positive rate on a catalog of real (benign)
tools. ``--labels`` is a labelled set shaped like mcpproxy's ``security_corpus_v1.json``
(``{"entries": [{"id", "description", "label": "malicious" | "benign", "category"}]}``): each entry is
scanned as a tool with that description, giving ``recall`` (malicious entries flagged) and
``false_positives`` (benign entries flagged, hard negatives included). Timings are process CPU time,
so a busy machine inflates them less than wall time would.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

from foldgate.dev.corpus import load_catalog_rows
from foldgate.errors import CorpusError
from foldgate.guard.poison_scan import RULES, Finding, scan_entry

__all__ = ["format_scan_report", "load_labels", "run_scan_bench"]

_EXAMPLES = 20  # flagged tools listed in the report (rule, field, excerpt): enough to review by eye


def load_labels(path: str | Path) -> list[dict[str, Any]]:
    """The entries of a labelled security corpus: each with ``id``, ``description`` and ``label``."""
    p = Path(path)
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CorpusError(f"cannot read labels {p}: {exc}") from exc
    entries = doc.get("entries") if isinstance(doc, dict) else doc
    if not isinstance(entries, list):
        raise CorpusError(f"{p}: expected an object with an 'entries' list")
    out: list[dict[str, Any]] = []
    for i, entry in enumerate(entries):
        ok = isinstance(entry, dict) and isinstance(entry.get("description"), str)
        if not ok or entry.get("label") not in ("malicious", "benign"):
            raise CorpusError(f"{p}: entry {i} needs a description and a label malicious|benign")
        out.append(entry)
    return out


def _summary(findings: list[Finding]) -> list[dict[str, str]]:
    return [{"rule": f.rule, "field": f.field, "excerpt": f.excerpt} for f in findings]


def run_scan_bench(tools: str | Path, labels: str | Path | None = None) -> dict[str, Any]:
    """Scan a catalog (and a labelled set, when given); the figures as one JSON-ready dict."""
    rows = load_catalog_rows(tools)
    started = time.process_time()
    results = [scan_entry(row) for row in rows]
    seconds = time.process_time() - started
    flagged = [(row, found) for row, found in zip(rows, results, strict=True) if found]
    per_rule = Counter(f.rule for _, found in flagged for f in {x.rule: x for x in found}.values())
    report: dict[str, Any] = {
        "tools_path": str(tools),
        "tools": len(rows),
        "flagged": len(flagged),
        "flagged_rate": len(flagged) / len(rows) if rows else 0.0,
        "scan_s": round(seconds, 3),
        "rules": {rule: per_rule[rule] for rule in RULES if per_rule[rule]},
        "examples": [
            {"tool": f"{row.get('server')}__{row.get('name', row.get('tool'))}", "findings": _summary(found)}
            for row, found in flagged[:_EXAMPLES]
        ],
    }
    if labels is not None:
        entries = load_labels(labels)
        malicious = [e for e in entries if e["label"] == "malicious"]
        benign = [e for e in entries if e["label"] == "benign"]
        hits = {
            str(e.get("id")): scan_entry({"name": "tool", "description": e["description"]}) for e in entries
        }
        missed = [str(e.get("id")) for e in malicious if not hits[str(e.get("id"))]]
        wrong = [str(e.get("id")) for e in benign if hits[str(e.get("id"))]]
        report.update(
            {
                "labels_path": str(labels),
                "malicious": len(malicious),
                "benign": len(benign),
                "recall": (len(malicious) - len(missed)) / len(malicious) if malicious else 0.0,
                "false_positives": len(wrong),
                "missed": missed,
                "false_positive_ids": wrong,
            }
        )
    return report


def format_scan_report(report: dict[str, Any]) -> str:
    """A human-readable summary of :func:`run_scan_bench`'s report, with per-rule counts."""
    lines = [
        f"catalog {report['tools_path']}: {report['tools']} tools, {report['flagged']} flagged "
        f"({100 * report['flagged_rate']:.3f}%) in {report['scan_s']:.2f} s CPU",
    ]
    lines += [f"  {rule:<22} {count}" for rule, count in report["rules"].items()]
    if "recall" in report:
        lines.append(
            f"labels {report['labels_path']}: recall {report['recall']:.3f} on {report['malicious']} "
            f"malicious ({', '.join(report['missed']) or 'none missed'}); {report['false_positives']} of "
            f"{report['benign']} benign flagged ({', '.join(report['false_positive_ids']) or 'none'})"
        )
    for example in report["examples"]:
        for f in example["findings"]:
            lines.append(f"  {example['tool']}: {f['rule']} in {f['field']}: {f['excerpt']}")
    return "\n".join(lines)
