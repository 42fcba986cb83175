"""The learned half of the poisoning scan: the shipped injection scorer (:mod:`foldgate.guard`) reads
every description of a tool the rules passed, and a description it flags is a ``learned-injection``
finding that says why: the score and the features that weighed most.

The rules run first and explain themselves; the model is there for the phrasings nobody wrote a rule
for (a polite request, another language, an order with no trigger word). It reads descriptions only (the
tool's and its schemas'): names, titles and enums are short labels the rules already read.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from foldgate.guard.fields import scored_fields

if TYPE_CHECKING:
    from foldgate.guard.scorer import Score, TextScorer

__all__ = ["LEARNED_RULE", "describe_score", "learned_fields"]

LEARNED_RULE: Final = "learned-injection"
_EXCERPT: Final = 80
_MAX_FINDINGS: Final = 5  # flagged fields reported per tool: the operator needs the first few, not all


def describe_score(score: Score) -> str:
    """The score and its strongest features as one short line (``0.97: cue:secrecy, w:id_rsa``)."""
    names = ", ".join(name for name, _ in score.features)
    return f"{score.probability:.2f}: {names}" if names else f"{score.probability:.2f}"


def _excerpt(text: str) -> str:
    # Invisible and control characters are the attack's, never shown: the excerpt is displayed.
    cut = "".join(c if c.isprintable() else " " for c in text[:_EXCERPT])
    return cut + ("…" if len(text) > _EXCERPT else "")


def learned_fields(entry: Mapping[str, Any], scorer: TextScorer) -> list[tuple[str, str, Score]]:
    """``(field path, excerpt, score)`` of every description of ``entry`` the scorer flags."""
    out: list[tuple[str, str, Score]] = []
    for path, text in scored_fields(entry):
        score = scorer.score(text)
        if score.flagged:
            out.append((path, _excerpt(" ".join(text.split())), score))
            if len(out) >= _MAX_FINDINGS:
                break
    return out
