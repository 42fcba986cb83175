"""Wiring of the indexer's enrichment pass (issue 29): the provider FOLDGATE_ENRICHMENT_PROVIDER names,
the per-run caps, and validation with the learned injection scorer. Nothing here loads unless an
indexer enriches."""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldgate.config.settings import Settings

if TYPE_CHECKING:
    from foldgate.enrich.base import EnrichmentProvider
    from foldgate.enrich.pipeline import EnrichmentPass

__all__ = ["open_enrichment"]


def open_enrichment(
    settings: Settings,
    provider: EnrichmentProvider | None = None,
    *,
    token_cap: int | None = None,
    environ: dict[str, str] | None = None,
) -> EnrichmentPass | None:
    """The indexer's enrichment pass over ``provider`` (default: the one FOLDGATE_ENRICHMENT_PROVIDER
    names, from :class:`~foldgate.config.enrichment.EnrichmentSettings`) within the per-run caps of the
    settings; None when it is ``none``, which costs the indexer nothing. ``environ``: the variables to
    read instead of the process's (tests)."""
    if provider is None:
        # The enrichment settings and providers only where an indexer is built.
        from foldgate.config.enrichment import EnrichmentSettings
        from foldgate.enrich.providers import provider_for

        chosen = EnrichmentSettings.from_env(environ)
        if chosen.provider == "none":
            return None
        provider = provider_for(chosen)
    if provider.source.split(":", 1)[0] == "none":
        return None
    # Loaded only in an indexer that enriches: the serving functions never pay for it.
    from foldgate.enrich.base import EnrichmentRequest, RawEnrichment
    from foldgate.enrich.pipeline import EnrichmentCaps, EnrichmentPass
    from foldgate.enrich.validate import validate
    from foldgate.guard.scorer import load_scorer
    from foldgate.model.enrichment import Enrichment

    scorer = load_scorer()

    def validated(raw: RawEnrichment, request: EnrichmentRequest, *, source: str) -> Enrichment:
        # Generated text meets the same learned injection scorer as upstream descriptions.
        return validate(raw, request, source=source, scorer=scorer)

    caps = EnrichmentCaps(
        max_tools=settings.enrichment_run_tools,
        max_tokens=token_cap,
        max_seconds=settings.enrichment_run_seconds,
        concurrency=settings.enrichment_concurrency,
    )
    return EnrichmentPass(provider, caps, validator=validated)
