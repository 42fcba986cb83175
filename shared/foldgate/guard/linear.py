"""The shipped injection model: a logistic regression over the named features of
:mod:`foldgate.guard.features`, read from a JSON file inside this package.

The file holds the bias, the decision threshold and one weight per feature name; a text's score is the
sigmoid of the bias plus the weights of the features present, taken over each passage, the highest
passage counting (an attack appended to an honest description is read on its own). The weights the
model learned for a passage's features are what a finding shows, so it explains itself: ``cue:secrecy``,
``do not``, ``id_rsa``.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Mapping
from itertools import repeat
from typing import Any, Final

from foldgate.guard.features import passage_features, text_features
from foldgate.guard.score import Score

__all__ = ["FORMAT", "LinearScorer"]

FORMAT: Final = 1
_TOP: Final = 5  # features shown with a score: enough to see why, short enough to read
_EXPLAIN: Final = 0.5  # below this probability nothing needs explaining: no features (saves the sort)


class LinearScorer:
    """A :class:`~foldgate.guard.scorer.TextScorer` over a weight per feature name; immutable after
    construction, so one instance serves every thread."""

    __slots__ = ("_bias", "_weights", "threshold")

    def __init__(self, weights: Mapping[str, float], bias: float, threshold: float) -> None:
        self._weights = dict(weights)
        self._bias = bias
        self.threshold = threshold

    @classmethod
    def from_document(cls, doc: Any) -> LinearScorer:
        """A scorer from the model file's JSON document; :class:`ValueError` when it is not one."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError(f"not an injection model of format {FORMAT}")
        weights, bias, threshold = doc.get("weights"), doc.get("bias"), doc.get("threshold")
        if not isinstance(weights, dict) or not isinstance(bias, int | float):
            raise ValueError("injection model lacks weights or bias")
        if not isinstance(threshold, int | float) or not 0.0 < threshold < 1.0:
            raise ValueError("injection model threshold must lie in (0, 1)")
        clean = {str(k): float(v) for k, v in weights.items() if isinstance(v, int | float)}
        return cls(clean, float(bias), float(threshold))

    @classmethod
    def from_bytes(cls, data: bytes) -> LinearScorer:
        """A scorer from the model file's bytes."""
        try:
            doc = json.loads(data)
        except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError
            raise ValueError(f"injection model is not JSON: {exc}") from exc
        return cls.from_document(doc)

    def logit(self, passage: str) -> float:
        """The model's log-odds for one passage (no cutting into passages)."""
        feats = passage_features(passage)
        return self._bias + sum(map(self._weights.get, feats, repeat(0.0, len(feats))))

    def score(self, text: str) -> Score:
        """The verdict on ``text``: the most suspicious of its passages, with that passage's strongest
        features (positive weights only: what pushed the score up) when the probability is 0.5 or more."""
        best_z = -math.inf
        best: set[str] = set()
        get = self._weights.get
        for feats in text_features(text):
            z = self._bias + sum(map(get, feats, repeat(0.0, len(feats))))
            if z > best_z:
                best_z, best = z, feats
        if best_z == -math.inf:
            return Score(0.0, False)
        probability = 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, best_z))))
        if probability < _EXPLAIN:
            return Score(probability, probability >= self.threshold)
        weighted = [(f, w) for f in best if (w := get(f, 0.0)) > 0.0]
        top = heapq.nlargest(_TOP, weighted, key=lambda fw: fw[1])
        return Score(probability, probability >= self.threshold, tuple((f, round(w, 3)) for f, w in top))
