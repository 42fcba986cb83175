"""The small fixed catalog the enrichment tests use (tests/data/enrich/catalog.jsonl), as requests with
their near-duplicate neighbours: the same tool on another server, or a tool of the same server acting on
the same thing (a CRUD family)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from foldgate.enrich.base import EnrichmentRequest, Neighbour

CATALOG = Path(__file__).parent / "data" / "enrich" / "catalog.jsonl"


def _subject(name: str) -> str:
    return name.rsplit("_", 1)[-1].removesuffix("s")


def catalog_requests() -> list[EnrichmentRequest]:
    """One request per tool of the fixed catalog, neighbours filled in."""
    rows = [json.loads(line) for line in CATALOG.read_text(encoding="utf-8").splitlines() if line.strip()]
    requests = []
    for row in rows:
        neighbours = tuple(
            Neighbour(other["name"], other["server"], other["description"])
            for other in rows
            if other is not row
            and (
                other["name"] == row["name"]
                or (other["server"] == row["server"] and _subject(other["name"]) == _subject(row["name"]))
            )
        )
        digest = hashlib.sha256(json.dumps(row, sort_keys=True).encode()).hexdigest()
        requests.append(
            EnrichmentRequest(
                key=f"{row['server']}:{row['name']}",
                content_hash=digest,
                name=row["name"],
                server=row["server"],
                title=row.get("title", ""),
                description=row["description"],
                params=tuple(row["params"]),
                neighbours=neighbours,
            )
        )
    return requests
