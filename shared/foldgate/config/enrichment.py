"""Index-time enrichment settings: which language model writes the hints and queries, and its budget.

Read from ``FOLDGATE_ENRICHMENT_*`` variables once per process (the indexer) or given by the CLI. The
provider is ``none`` unless one is chosen: enrichment costs money in the cloud and minutes locally.
"""

from __future__ import annotations

import os
from typing import Any, Final, Literal

from pydantic import Field, SecretStr, ValidationError, model_validator

from foldgate.config.tenant import Strict, format_validation
from foldgate.errors import ConfigError

__all__ = ["DEFAULT_MODELS", "ENV_PREFIX", "EnrichmentSettings"]

ENV_PREFIX: Final = "FOLDGATE_ENRICHMENT_"

# The model each provider uses when none is named. Bedrock: the cheapest text model of the Converse
# API; local: the packaged GGUF that follows the answer's format best of those `make llm` installs
# (foldgate.enrich.providers.local_models: Gemma 3 270M, a base model asked with worked examples).
DEFAULT_MODELS: Final[dict[str, str]] = {
    "none": "",
    "local": "gemma3-270m",
    "openai": "",
    "bedrock": "amazon.nova-micro-v1:0",
}


class EnrichmentSettings(Strict):
    """How the indexer enriches tools; ``provider: none`` turns enrichment off."""

    provider: Literal["none", "local", "openai", "bedrock"] = "none"
    # The model: a Bedrock model id, the OpenAI-compatible server's model name, or a packaged local
    # model's name; empty picks the provider's default (DEFAULT_MODELS).
    model: str = Field(default="", max_length=200)
    # local: a GGUF file to load instead of a packaged model, and its SHA-256 (checked before loading;
    # a packaged model's checksum ships with it).
    model_path: str | None = None
    model_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    # How the model is asked: "chat" (an instruction-tuned model), "completion" (a base model continues
    # worked examples); "auto" picks the packaged model's own style, chat elsewhere.
    prompt_style: Literal["auto", "chat", "completion"] = "auto"
    # Where a local model is assembled (a packaged model shipped in chunks) when it is not a single file.
    model_cache_dir: str = ".foldgate/models"
    threads: int | None = Field(default=None, ge=1, le=256)
    # openai: the server's base URL (…/v1) and its key, if it wants one.
    base_url: str | None = None
    api_key: SecretStr | None = None
    # bedrock: the region (None: the SDK's default chain, i.e. the function's region).
    region: str | None = None
    # Every provider: per request, the seconds one answer may take and the retries (with exponential
    # backoff from backoff_s) after a throttle, a timeout or a 5xx.
    timeout_s: float = Field(default=30.0, gt=0, le=600)
    retries: int = Field(default=3, ge=0, le=10)
    backoff_s: float = Field(default=1.0, ge=0, le=60)
    # The answer's length (tokens) and sampling temperature: greedy by default (repeatable, cacheable).
    max_tokens: int = Field(default=160, ge=32, le=1024)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    # Per run (one index run of one tenant): stop enriching once this many tokens (in + out) or this
    # many US dollars at the prices below are spent; the rest waits for the next run. None: no cap.
    run_token_cap: int | None = Field(default=10_000_000, ge=1)
    run_cost_cap_usd: float | None = Field(default=5.0, gt=0)
    # The model's on-demand price, US dollars per million tokens (defaults: Nova Micro in us-east-1).
    price_in_per_mtok: float = Field(default=0.035, ge=0)
    price_out_per_mtok: float = Field(default=0.14, ge=0)

    @model_validator(mode="after")
    def _provider_needs(self) -> EnrichmentSettings:
        if self.provider == "openai" and not (self.base_url and self.model):
            raise ValueError("the openai provider needs base_url and model")
        if self.base_url is not None and not self.base_url.startswith(("http://", "https://")):
            raise ValueError("base_url must be an http(s) URL")
        return self

    @property
    def model_id(self) -> str:
        """The model named, or the provider's default."""
        return self.model or DEFAULT_MODELS[self.provider]

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None) -> EnrichmentSettings:
        """Read ``FOLDGATE_ENRICHMENT_*`` variables (``FOLDGATE_ENRICHMENT_PROVIDER``, ``…_MODEL``, …)."""
        env = dict(os.environ if environ is None else environ)
        fields: dict[str, Any] = {}
        for name in cls.model_fields:
            value = env.get(ENV_PREFIX + name.upper(), "")
            if value != "":  # a template parameter left empty means "the default"
                fields[name] = value
        try:
            return cls.model_validate(fields)
        except ValidationError as exc:
            raise ConfigError(f"invalid environment: {format_validation(exc)}") from exc
