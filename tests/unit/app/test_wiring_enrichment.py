"""The indexer's enrichment pass as the wiring builds it: off without a provider or for ``none``, and
its per-run caps read from FOLDGATE_ENRICHMENT_RUN_TOOLS / _RUN_SECONDS / _CONCURRENCY."""

from __future__ import annotations

from foldgate.app.wiring import open_enrichment
from foldgate.config.settings import Settings
from tests.unit.enrich.fixed import FixedProvider


def test_no_provider_or_the_none_provider_means_no_pass() -> None:
    settings = Settings.from_env({})
    assert open_enrichment(settings, None) is None
    assert open_enrichment(settings, FixedProvider("none:")) is None


def test_the_caps_come_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "FOLDGATE_ENRICHMENT_RUN_TOOLS": "7",
            "FOLDGATE_ENRICHMENT_RUN_SECONDS": "42.5",
            "FOLDGATE_ENRICHMENT_CONCURRENCY": "3",
        }
    )
    provider = FixedProvider("bedrock:amazon.nova-micro-v1:0")
    enrichment = open_enrichment(settings, provider, token_cap=1000)
    assert enrichment is not None
    assert enrichment.provider is provider
    assert (enrichment.caps.max_tools, enrichment.caps.max_seconds) == (7, 42.5)
    assert (enrichment.caps.concurrency, enrichment.caps.max_tokens) == (3, 1000)


def test_the_defaults_bound_every_run() -> None:
    enrichment = open_enrichment(Settings.from_env({}), FixedProvider())
    assert enrichment is not None
    assert enrichment.caps.max_tools == 500
    assert enrichment.caps.max_seconds == 600.0
