"""The enrichment contract: what a provider is asked, what it answers, what is stored per tool.

A provider turns one :class:`EnrichmentRequest` (a tool and its near-duplicate neighbours) into a
:class:`RawEnrichment` (model text, not yet trusted). The pipeline validates that text (length,
language, the same poisoning rules as upstream text) into an ``Enrichment``, stored with the
catalog version and keyed by the tool's content hash, so an unchanged tool is never enriched twice.
The stored ``Enrichment`` and its ``generated`` marker are data the catalog, search and console
read, so they live in ``foldgate.model.enrichment``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from foldgate.errors import FoldgateError

__all__ = [
    "CAP_REACHED",
    "EnrichmentError",
    "EnrichmentProvider",
    "EnrichmentRequest",
    "EnrichmentUsage",
    "Neighbour",
    "RawEnrichment",
]

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
