"""The interface of the learned injection scorer, shared by the index-time poisoning scan (tool
descriptions) and the result guard (text coming back from a tool).

A scorer reads one text and answers a probability that it addresses the model with instructions an
honest tool would not give, with the features that weighed most (so a finding explains itself). The
shipped model is a small file inside this package, trained by ``make guard-model``; where it is absent
(a checkout that has not trained it) :func:`load_scorer` answers ``None`` and callers fall back to the
rules alone."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

__all__ = ["Score", "TextScorer", "load_scorer"]


@dataclass(frozen=True, slots=True)
class Score:
    """A scorer's verdict on one text: ``probability`` in [0, 1], ``flagged`` when it is at or over the
    model's decision threshold, and the strongest contributing features (name, weight), largest first."""

    probability: float
    flagged: bool
    features: tuple[tuple[str, float], ...] = ()


class TextScorer(Protocol):
    """Scores texts; pure and thread-safe, no I/O after loading."""

    def score(self, text: str) -> Score:
        """The verdict on ``text`` (a tool description, or one passage of a tool result)."""
        ...


def load_scorer() -> TextScorer | None:
    """The shipped model, loaded once per process, or ``None`` where it has not been trained."""
    return None
