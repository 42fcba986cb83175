"""The enrichment contract: what a provider is asked, what it answers, what is stored per tool.

A provider turns one :class:`EnrichmentRequest` (a tool and its near-duplicate neighbours) into a
:class:`RawEnrichment` (model text, not yet trusted). The pipeline validates that text (length,
language, the same poisoning rules as upstream text) into an :class:`Enrichment`, stored with the
catalog version and keyed by the tool's content hash, so an unchanged tool is never enriched twice.
Generated text is the gateway's, never the upstream's words: wherever it is shown it carries the
``generated`` marker.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from foldgate.errors import FoldgateError

__all__ = [
    "CAP_REACHED",
    "GENERATED_MARKER",
    "Enrichment",
    "EnrichmentError",
    "EnrichmentProvider",
    "EnrichmentRequest",
    "EnrichmentUsage",
    "Neighbour",
    "RawEnrichment",
]

# Shown beside generated text wherever it reaches a person or a model: it is not the upstream's text.
GENERATED_MARKER = "generated"
# The code of a provider's "this run's token or cost budget is spent" error: the pass stops and the
# rest of the catalog waits for the next run (not the tools' failure).
CAP_REACHED = "enrichment_cap_reached"


class EnrichmentError(FoldgateError):
    """A provider could not enrich a tool (network, quota, refusal, unparseable output).

    Never fatal to an index run: the tool stays un-enriched and the run succeeds.
    """

    code = "enrichment_failed"


@dataclass(frozen=True, slots=True)
class Neighbour:
    """A near-duplicate of the tool being enriched, shown to the model so the hint says what differs."""

    name: str
    server: str
    description: str


@dataclass(frozen=True, slots=True)
class EnrichmentRequest:
    """One tool to enrich: its public facts (bounded by the pipeline) and its neighbours."""

    key: str  # "server:tool", the catalog's tool key
    content_hash: str  # the tool's content hash: the cache key of the answer
    name: str
    server: str
    title: str
    description: str
    params: tuple[str, ...]  # parameter names (with a short description each where present)
    neighbours: tuple[Neighbour, ...] = ()


@dataclass(frozen=True, slots=True)
class RawEnrichment:
    """A provider's answer before validation: untrusted model output."""

    hint: str
    queries: tuple[str, ...]
    tokens_in: int = 0
    tokens_out: int = 0


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


@dataclass(slots=True)
class EnrichmentUsage:
    """What a provider spent in one run: printed per 100 tools and checked against the run's caps."""

    calls: int = 0
    failures: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)  # a few first error messages, for the report


class EnrichmentProvider(ABC):
    """A language model behind one interface (none, local GGUF, OpenAI-compatible, Bedrock)."""

    #: "<provider>:<model>", stored with every enrichment it produced.
    source: str

    def __init__(self) -> None:
        self.usage = EnrichmentUsage()

    @abstractmethod
    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        """Enrich one tool; raise :class:`EnrichmentError` on any failure (never anything else).

        Implementations account their calls, tokens and time in :attr:`usage`.
        """

    async def aclose(self) -> None:  # noqa: B027 - optional hook, most providers hold nothing
        """Release what the provider holds (HTTP clients, a loaded model)."""
