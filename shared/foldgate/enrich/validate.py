"""Provider output → a stored :class:`~foldgate.enrich.base.Enrichment`, or a rejection.

Minimal bounds only (lengths and counts); the full rules (language, the poisoning scan over generated
text) belong to the providers' change of issue 29, which replaces this module.
"""

from __future__ import annotations

from foldgate.enrich.base import Enrichment, EnrichmentError, EnrichmentRequest, RawEnrichment

__all__ = ["validate"]

_MAX_HINT = 300
_MAX_QUERY = 120
_MAX_QUERIES = 5


def validate(raw: RawEnrichment, request: EnrichmentRequest, *, source: str) -> Enrichment:
    """The enrichment to store for ``request``; EnrichmentError when the output is unusable."""
    hint = " ".join(raw.hint.split())
    queries = tuple(q for q in (" ".join(q.split()) for q in raw.queries) if 0 < len(q) <= _MAX_QUERY)
    if not hint or len(hint) > _MAX_HINT:
        raise EnrichmentError(f"{request.key}: hint empty or longer than {_MAX_HINT} characters")
    return Enrichment(hint, queries[:_MAX_QUERIES], request.content_hash, source)
