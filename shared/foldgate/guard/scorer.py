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
from typing import TYPE_CHECKING, Final, Protocol

# Score lives in its own module so the model's implementation (foldgate.guard.linear) can build one
# without importing this module back; it is part of this interface all the same.
from foldgate.guard.score import Score

if TYPE_CHECKING:
    from foldgate.guard.semantic import CueModel, Encoder

__all__ = [
    "MANIFEST_FILE",
    "MODEL_FILE",
    "EitherScorer",
    "Score",
    "TextScorer",
    "load_result_scorer",
    "load_scorer",
    "load_semantic",
]

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


class EitherScorer:
    """Several scorers read as one: a text is flagged when any of them flags it (the first that does
    gives the verdict and its features); otherwise the highest probability stands, unflagged."""

    __slots__ = ("_scorers",)

    def __init__(self, *scorers: TextScorer) -> None:
        self._scorers = scorers

    def score(self, text: str) -> Score:
        """The first flagging verdict, or the highest unflagged one."""
        best = Score(0.0, False)
        for scorer in self._scorers:
            verdict = scorer.score(text)
            if verdict.flagged:
                return verdict
            if verdict.probability > best.probability:
                best = verdict
        return best


@functools.cache
def _cue_model() -> CueModel | None:
    # Loaded on first use: only a process that scores reads the file.
    from importlib import resources

    from foldgate.guard.semantic import SEMANTIC_FILE, CueModel

    try:
        data = resources.files("foldgate.guard").joinpath("data", SEMANTIC_FILE).read_bytes()
    except OSError:
        return None
    try:
        return CueModel.from_bytes(data)
    except ValueError as exc:
        log.warning("semantic model not loaded, the rules and the lexical scorer run alone: %s", exc)
        return None


def load_semantic(encoder: Encoder | None = None, *, results: bool = False) -> TextScorer | None:
    """The cue-and-vector scorer: its vector head when ``encoder`` is the search encoder it was trained
    on, its cue head otherwise (no encoder, another model, a plain install without the ONNX model);
    ``None`` where the model file is absent. ``results``: with the thresholds for tool results."""
    # The scorer class loads with the model: a process that never scores never imports it.
    from foldgate.guard.semantic import SemanticScorer

    model = _cue_model()
    return None if model is None else SemanticScorer(model, encoder, results=results)


@functools.cache
def load_result_scorer() -> TextScorer | None:
    """What the result guard reads passages with: the lexical model and the cue head, either flagging.
    No sentence vectors on the request path: one embedding costs 4-15 ms, over the guard's budget."""
    scorers = [s for s in (load_scorer(), load_semantic(results=True)) if s is not None]
    if not scorers:
        return None
    return scorers[0] if len(scorers) == 1 else EitherScorer(*scorers)
