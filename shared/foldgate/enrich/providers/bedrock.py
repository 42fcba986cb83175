"""The ``bedrock`` provider: a small model through the Bedrock Converse API (``bedrock-runtime``).

One Converse call per tool: the system prompt and the tool as one user message, greedy, bounded by
``maxTokens``. A throttle (or a model still warming up, or a 5xx) is retried with backoff; botocore's
own retries are off so the two never multiply. Each run has a token cap and a cost cap (tokens times
the model's on-demand price): once either is reached every further request fails at once with
:class:`CapReached`, so the rest of the catalog stays un-enriched until the next run.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Final

from foldgate.enrich.base import (
    CAP_REACHED,
    EnrichmentError,
    EnrichmentProvider,
    EnrichmentRequest,
    RawEnrichment,
)
from foldgate.enrich.calls import accounted, answered, with_retries
from foldgate.enrich.prompt import chat_messages

if TYPE_CHECKING:
    from foldgate.config.enrichment import EnrichmentSettings

__all__ = ["BedrockProvider", "CapReached", "bedrock_provider"]

# Converse errors worth another try: the account's rate, the service or the model not ready yet.
TRANSIENT_CODES: Final = frozenset(
    {
        "ThrottlingException",
        "ServiceUnavailableException",
        "InternalServerException",
        "ModelNotReadyException",
        "ModelTimeoutException",
        "TooManyRequestsException",
    }
)
_REFUSED_STOPS: Final = frozenset({"guardrail_intervened", "content_filtered"})


class CapReached(EnrichmentError):
    """The run's token or cost cap is spent: no more Converse calls this run."""

    code = CAP_REACHED


def _transient(exc: BaseException) -> float | None:
    # botocore is loaded with the client that raised.
    from botocore.exceptions import ClientError, ConnectionError, ReadTimeoutError

    if isinstance(exc, ClientError):
        return 0.0 if exc.response.get("Error", {}).get("Code") in TRANSIENT_CODES else None
    if isinstance(exc, ConnectionError | ReadTimeoutError):
        return 0.0
    return None


def _text(response: dict[str, Any]) -> tuple[str, int, int]:
    """The answer text and token counts of a Converse response; EnrichmentError on a refusal."""
    usage = response.get("usage") or {}
    tokens = int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0)
    stop = response.get("stopReason")
    if stop in _REFUSED_STOPS:
        raise EnrichmentError(f"the model refused ({stop})")
    blocks = ((response.get("output") or {}).get("message") or {}).get("content") or []
    text = "".join(b["text"] for b in blocks if isinstance(b, dict) and isinstance(b.get("text"), str))
    return text, *tokens


class BedrockProvider(EnrichmentProvider):
    """Converse with ``model_id`` through ``client`` (a boto3 ``bedrock-runtime`` client)."""

    def __init__(
        self,
        *,
        client: Any,
        model_id: str,
        retries: int = 3,
        backoff_s: float = 1.0,
        max_tokens: int = 160,
        temperature: float = 0.0,
        token_cap: int | None = None,
        cost_cap_usd: float | None = None,
        price_in_per_mtok: float = 0.0,
        price_out_per_mtok: float = 0.0,
    ) -> None:
        super().__init__()
        self.source = f"bedrock:{model_id}"
        self.model_id = model_id
        self._client = client
        self._retries = retries
        self._backoff_s = backoff_s
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._token_cap = token_cap
        self._cost_cap_usd = cost_cap_usd
        self._price_in = price_in_per_mtok
        self._price_out = price_out_per_mtok

    @property
    def cost_usd(self) -> float:
        """What this run has spent at the configured prices."""
        return (self.usage.tokens_in * self._price_in + self.usage.tokens_out * self._price_out) / 1e6

    def _check_caps(self) -> None:
        spent = self.usage.tokens_in + self.usage.tokens_out
        if self._token_cap is not None and spent >= self._token_cap:
            raise CapReached(f"token cap reached: {spent} of {self._token_cap} tokens this run")
        if self._cost_cap_usd is not None and self.cost_usd >= self._cost_cap_usd:
            raise CapReached(f"cost cap reached: ${self.cost_usd:.4f} of ${self._cost_cap_usd:.2f} this run")

    def converse_request(self, request: EnrichmentRequest) -> dict[str, Any]:
        """The Converse parameters for one tool."""
        system, user = chat_messages(request)
        return {
            "modelId": self.model_id,
            "system": [{"text": system["content"]}],
            "messages": [{"role": "user", "content": [{"text": user["content"]}]}],
            "inferenceConfig": {
                "maxTokens": self._max_tokens,
                "temperature": self._temperature,
                "stopSequences": ["###"],
            },
        }

    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        """One Converse call for one tool (none once a cap is reached)."""
        self._check_caps()  # not a call: neither counted nor a failure of the model
        params = self.converse_request(request)
        async with accounted(self.usage):
            # boto3 is synchronous: the call runs in a worker thread.
            response = await with_retries(
                lambda: asyncio.to_thread(self._client.converse, **params),
                retries=self._retries,
                backoff_s=self._backoff_s,
                transient=_transient,
            )
            text, tokens_in, tokens_out = _text(response)
            return answered(self.usage, text, tokens_in, tokens_out)


def bedrock_provider(settings: EnrichmentSettings, client: Any = None) -> BedrockProvider:
    """The provider the settings name, on ``client`` or a new ``bedrock-runtime`` client (botocore's
    retries off: :func:`~foldgate.enrich.calls.with_retries` does them)."""
    if client is None:
        # boto3 is loaded only by an indexer that enriches through Bedrock.
        import boto3
        from botocore.config import Config

        config = Config(
            retries={"max_attempts": 1, "mode": "standard"},
            read_timeout=settings.timeout_s,
            connect_timeout=min(settings.timeout_s, 10.0),
        )
        client = boto3.client("bedrock-runtime", region_name=settings.region, config=config)
    return BedrockProvider(
        client=client,
        model_id=settings.model_id,
        retries=settings.retries,
        backoff_s=settings.backoff_s,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        token_cap=settings.run_token_cap,
        cost_cap_usd=settings.run_cost_cap_usd,
        price_in_per_mtok=settings.price_in_per_mtok,
        price_out_per_mtok=settings.price_out_per_mtok,
    )
