"""The labelled data of the learned injection scorer, split once for training (tools/build_guard_model.py)
and evaluation (``foldgate bench scan``), so both read the very same split.

- attacks: ``tests/data/guard/attacks.jsonl`` (generated in many styles by tools/guard_attacks.py),
  ``attacks_val.jsonl`` (hand-written, validation only), ``attacks_eval.jsonl`` (hand-written,
  evaluation only) and mcpproxy's labelled ``security_corpus_v1.json`` (a third party's, evaluation
  only, its honest entries included);
- honest tools: every tool of every real catalog in ``../shared/corpora``, ``honest_generated.jsonl``
  (honest look-alikes written with the attacks' words) and ``benign_hard.jsonl`` (training only).

Honest tools are split by server (near-duplicate servers of one name from different marketplaces fall
together), generated texts by template group: ``sha256(group) % 100`` puts a group in train (< 50),
validation (< 80) or evaluation. A tool of validation or evaluation whose texts all occur in training is
dropped from them (it would be scored as seen).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from foldgate.dev.corpus import load_catalog_rows
from foldgate.guard.fields import scored_fields

__all__ = [
    "CATALOGS",
    "DATA_FILES",
    "SECURITY",
    "Item",
    "Split",
    "bucket",
    "catalog_label",
    "load_split",
    "server_group",
]

# Every real catalog in ../shared/corpora, as (folder, file).
CATALOGS: Final = (
    ("github-mcp-server", "tools.jsonl"),
    ("livemcpbench", "tools.jsonl"),
    ("mcp-flow", "tools.jsonl"),
    ("mcp-proxy-snapshots", "tools.jsonl"),
    ("mcptoolbench-pp", "tools.jsonl"),
    ("mcpproxy", "corpus_v2.tools.json"),
    ("mcpproxy", "livemcptool_snapshot/tools.json"),
)
SECURITY: Final = ("mcpproxy", "security_corpus_v1.json")
# The files of tests/data/guard this split reads (the folder holds the result guard's data too).
DATA_FILES: Final = (
    "attacks.jsonl",
    "attacks_val.jsonl",
    "attacks_eval.jsonl",
    "honest_generated.jsonl",
    "benign_hard.jsonl",
)
_SUFFIX: Final = re.compile(r"[_\s-]*\d+$")


@dataclass(frozen=True, slots=True)
class Item:
    """One labelled tool: its ``tools/list`` entry, 1 for an attack, where it came from, its id."""

    entry: dict[str, Any]
    label: int
    source: str
    ident: str

    @property
    def texts(self) -> list[str]:
        """The texts the scorer reads (:func:`foldgate.guard.fields.scored_fields`)."""
        return [text for _, text in scored_fields(self.entry)]


@dataclass
class Split:
    """Labelled tools by split: ``train``, ``val``, ``eval``."""

    items: dict[str, list[Item]] = field(default_factory=lambda: {"train": [], "val": [], "eval": []})

    def add(self, split: str, item: Item) -> None:
        """Add an item that has something to score."""
        if item.texts:
            self.items[split].append(item)


def bucket(group: str) -> str:
    """``train`` / ``val`` / ``eval`` for a group, fixed by its hash (never by what a model does)."""
    h = int(hashlib.sha256(group.encode("utf-8")).hexdigest()[:8], 16) % 100
    return "train" if h < 50 else "val" if h < 80 else "eval"


def server_group(server: str) -> str:
    """A server's group: marketplace prefix and copy number dropped (``deepnlp/A2A Bridge_2`` is
    ``server:a2a bridge``)."""
    name = server.rsplit("/", 1)[-1]
    return "server:" + _SUFFIX.sub("", name).strip().lower()


def catalog_label(folder: str, file: str) -> str:
    """A catalog's name in reports (``mcpproxy/corpus_v2.tools.json``, ``mcp-flow``)."""
    return folder if file == "tools.jsonl" else f"{folder}/{file}"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _described(text: str) -> dict[str, Any]:
    return {"name": "tool", "description": text}


def load_split(corpora: Path, data: Path) -> Split:
    """Every labelled tool, split (see the module doc); ``data`` is ``tests/data/guard``."""
    split = Split()
    seen: set[tuple[str, str, str]] = set()
    for folder, file in CATALOGS:
        for row in load_catalog_rows(corpora / folder / file):
            server = str(row.get("server", ""))
            entry = dict(row)
            if "inputSchema" not in entry and "schema" in entry:
                entry["inputSchema"] = entry["schema"]
            name = str(row.get("name", row.get("tool")))
            key = (server_group(server), name, "\n".join(t for _, t in scored_fields(entry)))
            if key in seen:  # the same tool in two catalogs (livemcpbench and mcpproxy's snapshot)
                continue
            seen.add(key)
            split.add(bucket(key[0]), Item(entry, 0, catalog_label(folder, file), f"{server}:{name}"))
    for row in _jsonl(data / "attacks.jsonl"):
        split.add(bucket("attack:" + row["group"]), Item(_described(row["text"]), 1, "generated", row["id"]))
    for row in _jsonl(data / "honest_generated.jsonl"):
        group = bucket("honest:" + row["group"])
        split.add(group, Item(_described(row["text"]), 0, "honest-generated", row["id"]))
    for row in _jsonl(data / "benign_hard.jsonl"):
        split.add("train", Item(_described(row["text"]), 0, "benign-hard", row["id"]))
    for row in _jsonl(data / "attacks_val.jsonl"):
        split.add("val", Item(_described(row["text"]), 1, "handwritten-val", row["id"]))
    for row in _jsonl(data / "attacks_eval.jsonl"):
        split.add("eval", Item(_described(row["text"]), 1, "handwritten-eval", row["id"]))
    security = json.loads((corpora / SECURITY[0] / SECURITY[1]).read_text(encoding="utf-8"))
    for entry in security["entries"]:
        label = 1 if entry["label"] == "malicious" else 0
        split.add("eval", Item(_described(entry["description"]), label, "mcpproxy-security", entry["id"]))
    seen_texts = {t for item in split.items["train"] for t in item.texts}
    for name in ("val", "eval"):
        split.items[name] = [it for it in split.items[name] if not set(it.texts) <= seen_texts]
    return split
