"""The cue-and-vector scorer: a passage's language-agnostic cues (:mod:`foldgate.guard.cues`) and, where
an encoder is at hand, its sentence vector, weighed by a logistic model trained on varied data
(tools/build_semantic_model.py).

Two heads share one file: ``cues`` reads the cues alone (cheap, every process has it: the result guard
on the request path, and the scan where no encoder is loaded) and ``vector`` adds the 384 numbers of the
search encoder's embedding of the passage (the index-time scan when the indexer has the local model
open). Only a passage with a gate cue is scored at all: one that addresses nobody, overrides nothing
and hides nothing is not an order to the model, whatever its words, and costs no embedding.

An encoder is anything with a ``model_id`` and ``encode(text)`` answering a vector (the search
package's local embedder is one); the guard never opens one itself, so it imports nothing above the
data model, and a vector head trained on other vectors (another ``model_id``) is not used.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol

from foldgate.guard.cues import cues_of, is_gated
from foldgate.guard.features import passages
from foldgate.guard.poison_text import normalise
from foldgate.guard.score import Score

__all__ = ["FORMAT", "SEMANTIC_FILE", "CueModel", "Encoder", "Head", "SemanticScorer", "passage_cues"]

FORMAT: Final = 1
SEMANTIC_FILE: Final = "semantic_model.json"
_TOP: Final = 5
# Passages embedded per text: a long description or result with many gated passages is read in its
# first few by the vector head (the cue head still reads them all).
_MAX_EMBEDDED: Final = 4


class Encoder(Protocol):
    """What the vector head needs of the search encoder."""

    @property
    def model_id(self) -> str:
        """Names the vectors: the head is used only with the encoder it was trained on."""
        ...

    def encode(self, text: str) -> Any:
        """The unit vector of ``text`` (a sequence of floats, e.g. a numpy array)."""
        ...


def passage_cues(passage: str) -> frozenset[str]:
    """The cues of one passage, on the guard's normalised text (look-alike letters and invisible
    characters folded, lower-cased)."""
    return cues_of(normalise(passage))


@dataclass(frozen=True, slots=True)
class Head:
    """One logistic head: a weight per cue, optionally one per vector dimension, a bias and the
    decision thresholds chosen at training: ``threshold`` for tool descriptions (held against every
    real catalog's false positives), ``result_threshold`` for tool results (against benign results)."""

    cues: dict[str, float]
    bias: float
    threshold: float
    vector: tuple[float, ...] = ()
    result_threshold: float = 0.0

    def cut(self, results: bool) -> float:
        """The threshold for results or for descriptions."""
        return self.result_threshold if results and self.result_threshold else self.threshold

    def logit(self, cues: Iterable[str], vector: Sequence[float] | None = None) -> float:
        """The log-odds of a passage with these cues (and vector, for a vector head)."""
        z = self.bias + sum(self.cues.get(c, 0.0) for c in cues)
        if self.vector and vector is not None:
            z += math.fsum(w * v for w, v in zip(self.vector, vector, strict=False))
        return z

    @classmethod
    def from_document(cls, doc: Any) -> Head:
        """A head from its JSON object; :class:`ValueError` when it is not one."""
        if not isinstance(doc, dict):
            raise ValueError("a head is a JSON object")
        cues, bias, threshold = doc.get("cues"), doc.get("bias"), doc.get("threshold")
        if not isinstance(cues, dict) or not isinstance(bias, int | float):
            raise ValueError("a head needs cues and a bias")
        if not isinstance(threshold, int | float) or not 0.0 < threshold < 1.0:
            raise ValueError("a head's threshold must lie in (0, 1)")
        vector = doc.get("vector", [])
        if not isinstance(vector, list) or not all(isinstance(v, int | float) for v in vector):
            raise ValueError("a head's vector must be a list of numbers")
        result_threshold = doc.get("result_threshold", threshold)
        if not isinstance(result_threshold, int | float) or not 0.0 < result_threshold < 1.0:
            raise ValueError("a head's result threshold must lie in (0, 1)")
        clean = {str(k): float(v) for k, v in cues.items() if isinstance(v, int | float)}
        vec = tuple(float(v) for v in vector)
        return cls(clean, float(bias), float(threshold), vec, float(result_threshold))


@dataclass(frozen=True, slots=True)
class CueModel:
    """The shipped model file: the cue head, and the vector head with the encoder it was trained on."""

    cue_head: Head
    vector_head: Head | None = None
    encoder_id: str = ""

    @classmethod
    def from_bytes(cls, data: bytes) -> CueModel:
        """The model from its file's bytes; :class:`ValueError` when it is not one."""
        try:
            doc = json.loads(data)
        except ValueError as exc:
            raise ValueError(f"semantic model is not JSON: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise ValueError(f"not a semantic model of format {FORMAT}")
        vector = doc.get("vector")
        return cls(
            Head.from_document(doc.get("cues")),
            Head.from_document(vector) if vector is not None else None,
            str(doc.get("encoder_id", "")),
        )


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))


def _probability(z: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, z))))


class SemanticScorer:
    """A :class:`~foldgate.guard.scorer.TextScorer` over the cue head, or the vector head when an
    encoder of the right ``model_id`` is given; ``results`` picks the heads' thresholds for tool
    results instead of descriptions. Immutable, thread-safe as its encoder is."""

    __slots__ = ("_encoder", "_head", "_model", "_results")

    def __init__(self, model: CueModel, encoder: Encoder | None = None, *, results: bool = False) -> None:
        self._model = model
        self._results = results
        usable = (
            encoder is not None and model.vector_head is not None and encoder.model_id == model.encoder_id
        )
        self._encoder = encoder if usable else None
        self._head = model.vector_head if usable and model.vector_head is not None else model.cue_head

    @property
    def uses_vectors(self) -> bool:
        """Whether this scorer reads sentence vectors (False: cues alone, the fallback)."""
        return self._encoder is not None

    def score(self, text: str) -> Score:
        """The verdict on ``text``: its most suspicious gated passage, with the cues that pushed it up.
        Passages are compared by their margin over their head's threshold (a passage whose vector could
        not be had is read by the cue head)."""
        best: tuple[float, float, Head, frozenset[str], bool] | None = None
        embedded = 0
        for passage in passages(text):
            cues = passage_cues(passage)
            if not is_gated(cues):
                continue
            vector: Sequence[float] | None = None
            if self._encoder is not None and embedded < _MAX_EMBEDDED:
                vector = self._vector(passage)
                embedded += 1
            head = self._head if vector is not None else self._model.cue_head
            z = head.logit(cues, vector)
            margin = z - _logit(head.cut(self._results))
            if best is None or margin > best[0]:
                best = (margin, z, head, cues, vector is not None)
        if best is None:
            return Score(0.0, False)
        margin, z, head, cues, with_vector = best
        probability = _probability(z)
        if margin < 0:
            return Score(probability, False)
        weighted = sorted(
            ((f"cue:{c}", w) for c in cues if (w := head.cues.get(c, 0.0)) > 0), key=lambda fw: -fw[1]
        )
        if with_vector:
            weighted.insert(0, ("vector", z - head.logit(cues)))
        return Score(probability, True, tuple((n, round(w, 3)) for n, w in weighted[:_TOP]))

    def _vector(self, passage: str) -> Sequence[float] | None:
        assert self._encoder is not None
        try:
            vec = self._encoder.encode(passage)
        except Exception:
            return None
        return vec.tolist() if hasattr(vec, "tolist") else list(vec)
