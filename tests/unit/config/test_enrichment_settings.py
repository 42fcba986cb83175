"""Enrichment settings: read from FOLDGATE_ENRICHMENT_* only, off by default, checked on the way in."""

from __future__ import annotations

import pytest

from foldgate.config.enrichment import EnrichmentSettings
from foldgate.errors import ConfigError


def test_enrichment_is_off_by_default() -> None:
    settings = EnrichmentSettings.from_env({})
    assert settings.provider == "none"
    assert settings.model_id == ""


def test_settings_are_read_from_the_environment_and_empty_values_mean_the_default() -> None:
    settings = EnrichmentSettings.from_env(
        {
            "FOLDGATE_ENRICHMENT_PROVIDER": "bedrock",
            "FOLDGATE_ENRICHMENT_RUN_TOKEN_CAP": "5000",
            "FOLDGATE_ENRICHMENT_RUN_COST_CAP_USD": "",
            "FOLDGATE_ENRICHMENT_REGION": "eu-west-1",
            "FOLDGATE_PROVIDER": "openai",  # not an enrichment variable
        }
    )
    assert settings.provider == "bedrock"
    assert settings.model_id == "amazon.nova-micro-v1:0"  # the provider's default model
    assert settings.run_token_cap == 5000
    assert settings.run_cost_cap_usd == 5.0
    assert settings.region == "eu-west-1"


def test_the_api_key_is_kept_secret() -> None:
    settings = EnrichmentSettings.from_env(
        {
            "FOLDGATE_ENRICHMENT_PROVIDER": "openai",
            "FOLDGATE_ENRICHMENT_BASE_URL": "http://127.0.0.1:8000/v1",
            "FOLDGATE_ENRICHMENT_MODEL": "qwen",
            "FOLDGATE_ENRICHMENT_API_KEY": "sk-very-secret",
        }
    )
    assert "sk-very-secret" not in repr(settings)
    assert settings.api_key is not None
    assert settings.api_key.get_secret_value() == "sk-very-secret"


@pytest.mark.parametrize(
    ("env", "field"),
    [
        ({"FOLDGATE_ENRICHMENT_PROVIDER": "gpt"}, "provider"),
        ({"FOLDGATE_ENRICHMENT_PROVIDER": "openai"}, "base_url and model"),
        ({"FOLDGATE_ENRICHMENT_BASE_URL": "file:///etc/passwd"}, "http(s) URL"),
        ({"FOLDGATE_ENRICHMENT_MODEL_SHA256": "abc"}, "model_sha256"),
        ({"FOLDGATE_ENRICHMENT_RUN_TOKEN_CAP": "0"}, "run_token_cap"),
        ({"FOLDGATE_ENRICHMENT_MAX_TOKENS": "100000"}, "max_tokens"),
    ],
)
def test_bad_values_are_a_config_error_naming_the_field(env: dict[str, str], field: str) -> None:
    with pytest.raises(ConfigError, match="invalid environment") as caught:
        EnrichmentSettings.from_env(env)
    assert field in str(caught.value)
