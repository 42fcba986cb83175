"""Enrichment providers, one module per backend, and :func:`provider_for`, which picks one.

``none`` (off), ``local`` (a GGUF model in process: tests and offline use), ``openai`` (any
OpenAI-compatible chat completions endpoint), ``bedrock`` (the Converse API). Each implements
:class:`foldgate.enrich.base.EnrichmentProvider`, fills its ``usage`` and raises only
:class:`~foldgate.enrich.base.EnrichmentError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foldgate.config.enrichment import EnrichmentSettings
    from foldgate.enrich.base import EnrichmentProvider

__all__ = ["provider_for"]


def provider_for(settings: EnrichmentSettings, *, bedrock_client: Any = None) -> EnrichmentProvider:
    """The provider ``settings.provider`` names, configured from ``settings``. ``bedrock_client``: a
    ready ``bedrock-runtime`` client (tests, a shared session); None makes one."""
    if settings.provider == "local":
        # llama-cpp-python (through the local provider) only when asked for.
        from foldgate.enrich.providers.local import local_provider

        return local_provider(settings)
    if settings.provider == "openai":
        # The HTTP client only when asked for.
        from foldgate.enrich.providers.openai import openai_provider

        return openai_provider(settings)
    if settings.provider == "bedrock":
        # boto3 only when asked for.
        from foldgate.enrich.providers.bedrock import bedrock_provider

        return bedrock_provider(settings, bedrock_client)
    # The same for the provider that does nothing: the others' modules stay unread.
    from foldgate.enrich.providers.none import NoEnrichment

    return NoEnrichment()
