"""The labelled passages of the cue-and-vector scorer (foldgate.guard.semantic), split once for training
(tools/build_semantic_model.py) and evaluation (``foldgate bench scan`` and ``bench guard``).

Two kinds of item: ``tool`` (a ``tools/list`` entry; its prose fields are read) and ``result`` (a tool
result's text). Sources:

- tools: the learned scan's split (:func:`foldgate.dev.guard_data.load_split`: real catalogs by server,
  generated attacks and honest look-alikes by template group, hand-written and mcpproxy's corpus for
  evaluation), plus ``varied.jsonl``'s tool rows (by language and sentence group);
- results: ``varied.jsonl``'s result rows (same groups), ``injections.jsonl`` (by text hash), the demo
  fleet's real results (``fleet_results.jsonl``, by server, all honest);
- evaluation only: ``handwritten_eval_tools.jsonl`` and ``handwritten_eval_results.jsonl``.

Only gated passages become samples; ``totals`` counts every item, so an attack none of whose passages is
gated counts as a miss in the figures.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from foldgate.dev.guard_data import bucket, load_split
from foldgate.guard.cues import is_gated
from foldgate.guard.features import passages
from foldgate.guard.poison_scan import entry_fields, prose_fields
from foldgate.guard.semantic import passage_cues

__all__ = ["EVAL_ONLY", "Labelled", "Sample", "item_texts", "load_items", "load_samples", "result_text"]

EVAL_ONLY: Final = ("handwritten_eval_tools.jsonl", "handwritten_eval_results.jsonl")
Totals = dict[str, dict[tuple[str, str, int], int]]


@dataclass(frozen=True, slots=True)
class Sample:
    """One gated passage of one labelled item."""

    item: str
    split: str
    kind: str
    source: str
    label: int
    passage: str
    cues: frozenset[str]


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _strings(node: Any, depth: int = 0) -> Iterator[str]:
    if depth > 32:
        return
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from _strings(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _strings(value, depth + 1)


def result_text(result: Any) -> str:
    """Every string of a recorded result, one per line (what the guard reads, field by field)."""
    return "\n".join(s for s in _strings(result) if not s.startswith("data:") and len(s) < 200_000)


def item_texts(kind: str, body: Any) -> list[str]:
    """The texts the scorer reads of an item: a tool's prose fields, or the result's text."""
    if kind == "tool":
        return [text for _, text in prose_fields(entry_fields(body))]
    return [str(body)]


@dataclass(frozen=True, slots=True)
class Labelled:
    """One labelled item: a tool entry or a result text."""

    ident: str
    split: str
    kind: str
    source: str
    label: int
    body: Any


def load_items(corpora: Path, data: Path) -> list[Labelled]:
    """Every labelled tool and result with its split (see the module doc)."""
    out: list[Labelled] = []
    for name, items in load_split(corpora, data).items.items():
        out += [Labelled(i.ident, name, "tool", _source(i.source), i.label, i.entry) for i in items]
    for row in _jsonl(data / "varied.jsonl"):
        body = row["entry"] if row["kind"] == "tool" else row["text"]
        out.append(Labelled(row["id"], bucket(row["group"]), row["kind"], "varied", row["label"], body))
    for i, row in enumerate(_jsonl(data / "injections.jsonl")):
        group = "injections:" + hashlib.sha256(row["text"].encode("utf-8")).hexdigest()
        label = int(bool(row["injected"]))
        out.append(Labelled(f"inj-{i}", bucket(group), "result", "injections", label, row["text"]))
    for i, row in enumerate(_jsonl(data / "fleet_results.jsonl")):
        text = result_text(row.get("result"))
        out.append(
            Labelled(f"fleet-{i}", bucket("fleet:" + str(row.get("server"))), "result", "fleet", 0, text)
        )
    for row in _jsonl(data / EVAL_ONLY[0]):
        out.append(Labelled(row["id"], "eval", "tool", "handwritten", row["label"], row["entry"]))
    for row in _jsonl(data / EVAL_ONLY[1]):
        out.append(Labelled(row["id"], "eval", "result", "handwritten", row["label"], row["text"]))
    return out


def load_samples(corpora: Path, data: Path) -> tuple[list[Sample], Totals]:
    """Every gated passage with its split, and the item counts by split, kind, source and label."""
    samples: list[Sample] = []
    totals: Totals = {"train": {}, "val": {}, "eval": {}}
    for item in load_items(corpora, data):
        key = (item.kind, item.source, item.label)
        totals[item.split][key] = totals[item.split].get(key, 0) + 1
        for text in item_texts(item.kind, item.body):
            for passage in passages(text):
                cues = passage_cues(passage)
                if is_gated(cues):
                    samples.append(
                        Sample(item.ident, item.split, item.kind, item.source, item.label, passage, cues)
                    )
    return samples, totals


def _source(source: str) -> str:
    # Real catalogs pool under one name: the false-positive budget is theirs.
    generated = ("generated", "honest-generated", "benign-hard", "handwritten-val", "handwritten-eval")
    return source if source in generated or source == "mcpproxy-security" else "catalog"
