"""The interface of the learned injection scorer, shared by the index-time poisoning scan (tool
descriptions) and the result guard (text coming back from a tool).

A scorer reads one text and answers a probability that it addresses the model with instructions an
honest tool would not give, with the features that weighed most (so a finding explains itself). The
shipped model is a small file inside this package, trained by ``make guard-model``; where it is absent
(a checkout that has not trained it) :func:`load_scorer` answers ``None`` and callers fall back to the
rules alone."""

from __future__ import annotations

import functools
import logging
from typing import Final, Protocol

# Score lives in its own module so the model's implementation (foldgate.guard.linear) can build one
# without importing this module back; it is part of this interface all the same.
from foldgate.guard.score import Score

__all__ = ["MANIFEST_FILE", "MODEL_FILE", "Score", "TextScorer", "load_scorer"]

# Inside this package (foldgate/guard/data/), beside its training manifest.
MODEL_FILE: Final = "injection_model.json"
MANIFEST_FILE: Final = "injection_manifest.json"

log = logging.getLogger(__name__)


class TextScorer(Protocol):
    """Scores texts; pure and thread-safe, no I/O after loading."""

    def score(self, text: str) -> Score:
        """The verdict on ``text`` (a tool description, or one passage of a tool result)."""
        ...


@functools.cache
def load_scorer() -> TextScorer | None:
    """The shipped model, loaded once per process, or ``None`` where it has not been trained (or its
    file cannot be read: logged, and the rules still run)."""
    # Loaded on first use, not at import: the model file is read only by a process that scores.
    from importlib import resources

    from foldgate.guard.linear import LinearScorer

    try:
        data = resources.files("foldgate.guard").joinpath("data", MODEL_FILE).read_bytes()
    except OSError:
        return None
    try:
        return LinearScorer.from_bytes(data)
    except ValueError as exc:
        log.warning("injection model not loaded, the rules run alone: %s", exc)
        return None
