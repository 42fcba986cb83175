"""A scorer's verdict (re-exported by :mod:`foldgate.guard.scorer`, the interface it belongs to)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Score"]


@dataclass(frozen=True, slots=True)
class Score:
    """A scorer's verdict on one text: ``probability`` in [0, 1], ``flagged`` when it is at or over the
    model's decision threshold, and the strongest contributing features (name, weight), largest first."""

    probability: float
    flagged: bool
    features: tuple[tuple[str, float], ...] = ()
