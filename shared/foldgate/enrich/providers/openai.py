"""The ``openai`` provider: any server speaking OpenAI's ``POST /v1/chat/completions`` (vLLM, Ollama,
llama.cpp's server, a hosted endpoint).

The base URL is the operator's (process settings, never a tenant's), so it is not held to the upstream
network guard. Each request has a deadline; a 429, a 5xx, a timeout or a refused connection is retried
with backoff (a Retry-After header is honoured), anything else fails the tool at once. The answer is
read up to a size bound: a server is not trusted to stop.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING, Any, Final

from foldgate.enrich.base import EnrichmentError, EnrichmentProvider, EnrichmentRequest, RawEnrichment
from foldgate.enrich.calls import accounted, answered, with_retries
from foldgate.enrich.prompt import chat_messages

if TYPE_CHECKING:
    import httpx2

    from foldgate.config.enrichment import EnrichmentSettings

__all__ = ["OpenAIProvider", "TransientHTTPError", "openai_provider"]

MAX_RESPONSE_BYTES: Final = 1 << 20
_RETRY_STATUSES: Final = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
_MAX_RETRY_AFTER_S: Final = 60.0


class TransientHTTPError(EnrichmentError):
    """A status worth retrying (throttled, overloaded), with the delay the server asked for."""

    def __init__(self, status: int, retry_after: float) -> None:
        super().__init__(f"HTTP {status} from the model server")
        self.status = status
        self.retry_after = retry_after


def _retry_after(value: str | None) -> float:
    try:
        return min(max(float(value or 0), 0.0), _MAX_RETRY_AFTER_S)
    except ValueError:  # an HTTP date: the backoff's own delay will do
        return 0.0


def _transient(exc: BaseException) -> float | None:
    # The HTTP client is loaded with the provider that uses it.
    import httpx2

    if isinstance(exc, TransientHTTPError):
        return exc.retry_after
    if isinstance(exc, TimeoutError | httpx2.TransportError):
        return 0.0
    return None


def _content(data: Any) -> tuple[str, int, int]:
    """The answer text and token counts of a chat completion; EnrichmentError on another shape."""
    try:
        message = data["choices"][0]["message"]
        text = message.get("content")
        if not isinstance(text, str):
            raise TypeError("no text content")
        usage = data.get("usage") or {}
        return text, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
        raise EnrichmentError(f"not a chat completion: {exc}") from exc


class OpenAIProvider(EnrichmentProvider):
    """Chat completions from ``base_url`` (up to and including ``/v1``) with ``model``."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout_s: float = 30.0,
        retries: int = 3,
        backoff_s: float = 1.0,
        max_tokens: int = 160,
        temperature: float = 0.0,
    ) -> None:
        super().__init__()
        self.source = f"openai:{model}"
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._retries = retries
        self._backoff_s = backoff_s
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._client: httpx2.AsyncClient | None = None

    def _http(self) -> httpx2.AsyncClient:
        if self._client is None:
            # The HTTP client is loaded with the provider that uses it.
            import httpx2

            self._client = httpx2.AsyncClient(timeout=self._timeout_s, follow_redirects=False)
        return self._client

    async def _post(self, body: dict[str, Any]) -> Any:
        headers = {"content-type": "application/json", "accept": "application/json"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        async with (
            asyncio.timeout(self._timeout_s),  # the whole exchange, not each read: no slow drip
            self._http().stream("POST", self.url, json=body, headers=headers) as response,
        ):
            if response.status_code in _RETRY_STATUSES:
                raise TransientHTTPError(
                    response.status_code, _retry_after(response.headers.get("retry-after"))
                )
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise EnrichmentError(f"model server answer over {MAX_RESPONSE_BYTES} bytes")
                chunks.append(chunk)
            raw = b"".join(chunks)
            if response.status_code != 200:
                excerpt = raw[:200].decode("utf-8", "replace")
                raise EnrichmentError(f"HTTP {response.status_code} from the model server: {excerpt}")
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise EnrichmentError("model server answered something other than JSON") from exc

    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        """One chat completion for one tool."""
        body = {
            "model": self._model,
            "messages": chat_messages(request),
            "max_tokens": self._max_tokens,
            "temperature": self._temperature,
            "stream": False,
        }
        async with accounted(self.usage):
            data = await with_retries(
                lambda: self._post(body),
                retries=self._retries,
                backoff_s=self._backoff_s,
                transient=_transient,
            )
            text, tokens_in, tokens_out = _content(data)
            return answered(self.usage, text, tokens_in, tokens_out)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        if self._client is not None:
            await self._client.aclose()
            self._client = None


def openai_provider(settings: EnrichmentSettings) -> OpenAIProvider:
    """The provider the settings name (``base_url``, ``model``, ``api_key``, timeouts, retries)."""
    if not settings.base_url:
        raise EnrichmentError("the openai provider needs FOLDGATE_ENRICHMENT_BASE_URL")
    return OpenAIProvider(
        base_url=settings.base_url,
        model=settings.model_id,
        api_key=settings.api_key.get_secret_value() if settings.api_key else None,
        timeout_s=settings.timeout_s,
        retries=settings.retries,
        backoff_s=settings.backoff_s,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
    )
