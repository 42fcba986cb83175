"""Read recorded tool catalogs: normalised ``tools.jsonl`` and mcpproxy's JSON corpus files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from foldgate.errors import CorpusError
from foldgate.model.tool import Tool, tool_from_wire

__all__ = ["load_catalog", "load_catalog_rows"]


def load_catalog_rows(path: str | Path) -> list[dict[str, Any]]:
    """The raw rows of a catalog file, each with at least ``server`` and ``name``.

    Accepts ``tools.jsonl`` (one tool per line), a JSON list of tools, or an object with a
    ``tools`` list (mcpproxy's ``corpus_v2.tools.json`` and ``livemcptool_snapshot/tools.json``).
    A directory is read as the ``tools.jsonl`` inside it.
    """
    p = Path(path)
    if p.is_dir():
        p = p / "tools.jsonl"
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise CorpusError(f"cannot read catalog {p}: {exc.strerror or exc}") from exc
    rows: list[Any]
    stripped = text.lstrip()
    if stripped.startswith("[") or (stripped.startswith("{") and p.suffix == ".json"):
        try:
            doc = json.loads(text)
        except ValueError as exc:
            raise CorpusError(f"{p} is not valid JSON: {exc}") from exc
        rows = doc.get("tools", []) if isinstance(doc, dict) else doc
    else:
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                rows.append(json.loads(line))
            except ValueError as exc:
                raise CorpusError(f"{p}:{lineno} is not valid JSON: {exc}") from exc
    out: list[dict[str, Any]] = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or "server" not in row or not ("name" in row or "tool" in row):
            raise CorpusError(f"{p}: row {i} lacks server/name")
        out.append(row)
    return out


def load_catalog(path: str | Path) -> list[Tool]:
    """Load a catalog file as Tools, in file order."""
    return [tool_from_wire(str(row["server"]), row) for row in load_catalog_rows(path)]
