"""What is stored per tool once enrichment is validated: the hint and queries, and their marker.

Generated text is the gateway's, never the upstream's words: wherever it is shown it carries the
``generated`` marker. The catalog, the search index and the console read this; the providers that
produce it (``foldgate.enrich``) sit above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["GENERATED_MARKER", "Enrichment"]

# Shown beside generated text wherever it reaches a person or a model: it is not the upstream's text.
GENERATED_MARKER = "generated"


@dataclass(frozen=True, slots=True)
class Enrichment:
    """Validated enrichment of one tool version, stored in the catalog next to the tool."""

    hint: str
    queries: tuple[str, ...]
    content_hash: str  # the tool version it was made for
    source: str  # "<provider>:<model>", e.g. "bedrock:amazon.nova-micro-v1:0"

    def to_doc(self) -> dict[str, Any]:
        """A JSON-able document for the stores."""
        return {
            "hint": self.hint,
            "queries": list(self.queries),
            "hash": self.content_hash,
            "source": self.source,
        }

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> Enrichment:
        """Inverse of :meth:`to_doc`."""
        return cls(
            hint=str(doc["hint"]),
            queries=tuple(str(q) for q in doc.get("queries", ())),
            content_hash=str(doc["hash"]),
            source=str(doc.get("source", "")),
        )
