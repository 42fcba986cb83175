"""The ``none`` provider: enrichment off. Every tool stays un-enriched; nothing is called or counted."""

from __future__ import annotations

from foldgate.enrich.base import EnrichmentError, EnrichmentProvider, EnrichmentRequest, RawEnrichment

__all__ = ["NoEnrichment"]


class NoEnrichment(EnrichmentProvider):
    """Answers every request with :class:`EnrichmentError`: the pipeline skips the pass when it sees
    ``enabled`` is False, so this is reached only by a caller that did not look."""

    source = "none:"
    enabled = False

    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        """Never enriches (enrichment is off)."""
        raise EnrichmentError("enrichment is off (FOLDGATE_ENRICHMENT_PROVIDER=none)")
