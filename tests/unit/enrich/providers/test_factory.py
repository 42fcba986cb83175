"""provider_for picks the backend the settings name; a local model that cannot be had (unknown, not
installed, wrong bytes) fails each request with EnrichmentError before any C++ code reads the file."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from foldgate.config.enrichment import EnrichmentSettings
from foldgate.enrich.base import EnrichmentError
from foldgate.enrich.providers import provider_for
from foldgate.enrich.providers.bedrock import BedrockProvider
from foldgate.enrich.providers.local import LocalProvider
from foldgate.enrich.providers.none import NoEnrichment
from foldgate.enrich.providers.openai import OpenAIProvider
from tests.enrich_data import catalog_requests

REQUEST = catalog_requests()[0]


async def test_none_is_off_and_enriches_nothing() -> None:
    provider = provider_for(EnrichmentSettings())
    assert isinstance(provider, NoEnrichment)
    assert provider.enabled is False
    with pytest.raises(EnrichmentError, match="off"):
        await provider.enrich(REQUEST)
    assert provider.usage.calls == 0


def test_openai_and_bedrock_are_built_from_the_settings() -> None:
    openai = provider_for(
        EnrichmentSettings(provider="openai", base_url="http://127.0.0.1:9/v1/", model="qwen2.5")
    )
    assert isinstance(openai, OpenAIProvider)
    assert (openai.url, openai.source) == ("http://127.0.0.1:9/v1/chat/completions", "openai:qwen2.5")
    bedrock = provider_for(EnrichmentSettings(provider="bedrock", region="us-east-1"))
    assert isinstance(bedrock, BedrockProvider)
    assert bedrock.source == "bedrock:amazon.nova-micro-v1:0"


async def test_an_unknown_local_model_fails_each_request_not_the_run() -> None:
    provider = provider_for(EnrichmentSettings(provider="local", model="gpt-5-local"))
    with pytest.raises(EnrichmentError, match="unknown local model 'gpt-5-local'"):
        await provider.enrich(REQUEST)
    assert (provider.usage.calls, provider.usage.failures) == (1, 1)


async def test_a_missing_model_file_is_an_enrichment_error(tmp_path: Path) -> None:
    provider = provider_for(EnrichmentSettings(provider="local", model_path=str(tmp_path / "absent.gguf")))
    with pytest.raises(EnrichmentError, match="model file not found"):
        await provider.enrich(REQUEST)


async def test_a_model_file_with_other_bytes_than_pinned_is_never_loaded(tmp_path: Path) -> None:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + b"\0" * 64)
    pinned = hashlib.sha256(b"the file we meant").hexdigest()
    provider = provider_for(EnrichmentSettings(provider="local", model_path=str(path), model_sha256=pinned))
    assert isinstance(provider, LocalProvider)
    for _ in range(2):  # the failed load is remembered: the file is not hashed again per tool
        with pytest.raises(EnrichmentError, match="SHA-256"):
            await provider.enrich(REQUEST)
    assert provider.usage.failures == 2
