"""The best tools of a query by cosine, without a float32 product over the whole catalog.

Hybrid fusion (:mod:`foldgate.search.hybrid`) uses a tool's cosine only when it is among the
``pool`` best visible cosines: below the pool-th its normalised dense signal is clipped to 0. So a
query needs the exact cosines of about 50 tools, not 11,000. :class:`CosineTable` finds them in two
steps:

1. **screen**: every tool's cosine to within a proven bound, from the stored int8 codes
   (:mod:`foldgate.search.int8dot`; 4.4 MB read instead of 17.5 MB). The query is written as two
   int8 rows, ``q ≈ s1·r1 + s2·r2`` (the second row quantises the first's remainder, ``s2 = s1 / 64``), so
   ``screen_i = t_i (s1 (c_i·r1) + s2 (c_i·r2))`` from exact integer products, and
   ``|screen_i - cosine_i| ≤ max_i ‖t_i c_i‖ · ‖q - s1·r1 - s2·r2‖`` plus float32 rounding
   (Cauchy-Schwarz; ``t_i c_i`` is a tool's dequantised vector, its norm precomputed per version);
2. **exact**: the cosines of the tools whose screened value, plus the bound, reaches the lowest exact
   cosine among the first ``count`` screened (~50-60 tools), in float64 from the same float32 rows
   the old matrix held, rounded once to float32. Every tool that can rank is among them, so the
   order by (cosine, doc number) is the exact one.

Without onnxruntime's integer product, the screen is the float32 product (bound 1e-4): the same
pages, as before, at the old cost.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from foldgate.search.int8dot import ZERO_POINT, Int8Dot, open_int8_dot

__all__ = ["CosineTable", "Screen", "top_order"]

_Q = np.float32(127.0)
# Query rows use codes -63..63 (see foldgate.search.int8dot: no saturation).
_ROW_LEVELS = 63.0
# The second query row's step: the first's over this (a power of two, so the rows combine exactly).
_FINE = 64.0
# Slack on every bound for float rounding (products of float32 rows, the final float32 cosine).
_ROUNDING = 1e-5
# The float32 product's own error against the exact cosine: far below this on 384 dimensions.
_FLOAT_SCREEN = 1e-4


def top_order(values: npt.NDArray[np.floating], count: int) -> npt.NDArray[np.intp]:
    """Doc numbers of the ``count`` largest values, best first, ties by doc number.

    Every doc tied with the last one kept is kept too (so possibly more than ``count``): the order
    is then a prefix of the full order, whatever equal values the partition happened to keep.
    """
    n = len(values)
    if count <= 0:
        return np.zeros(0, dtype=np.intp)
    if count >= n:
        return np.lexsort((np.arange(n), -values))
    part = np.argpartition(-values, count)[:count]
    part = np.flatnonzero(values >= values[part].min())
    return part[np.lexsort((part, -values[part]))]


@dataclass(frozen=True, slots=True)
class Screen:
    """One query's screened cosines (absent tools -inf) and their proven error bound."""

    vector: npt.NDArray[np.float32]
    values: npt.NDArray[np.float32]
    bound: float


class CosineTable:
    """A catalog version's tool vectors prepared for queries (built once per version, immutable).

    ``codes`` (n x dim int8) and ``scales`` (n float32) are the dense index's, aligned to the
    lexical doc numbers; a row with scale 0 has no vector.
    """

    def __init__(self, codes: npt.NDArray[np.int8], scales: npt.NDArray[np.float32]) -> None:
        """Precompute each row's dequantisation factor and norm, and pack the codes for the screen."""
        self._codes = np.ascontiguousarray(codes, dtype=np.int8)
        # As the float32 matrix always held it: code x (scale / 127), each in float32.
        self._unit = (np.asarray(scales, dtype=np.float32) / _Q).astype(np.float32)
        self.present: npt.NDArray[np.bool_] = np.asarray(scales > 0)
        norms = np.sqrt(np.einsum("ij,ij->i", self._codes, self._codes, dtype=np.float64))
        self._reach = float((norms * self._unit.astype(np.float64)).max()) if len(norms) else 0.0
        self._dot: Int8Dot | None = open_int8_dot(self._codes)
        # 64 r1 + r2 fits int32 while dim x 63 x 128 x 65 does (any dim below ~4,000).
        self._wide = np.int32 if self.dim * 63 * 128 * 65 < 2**31 else np.int64
        self._matrix: npt.NDArray[np.float32] | None = None

    def __len__(self) -> int:
        return len(self._codes)

    @property
    def dim(self) -> int:
        """Vector length."""
        return int(self._codes.shape[1])

    @property
    def integer(self) -> bool:
        """Whether the screen runs on the int8 codes (else on the float32 matrix)."""
        return self._dot is not None

    def rows(self, docs: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
        """The float32 vectors of ``docs`` (the dequantised rows)."""
        rows = self._codes[docs].astype(np.float32)
        rows *= self._unit[docs, None]
        return rows

    def exact(self, docs: npt.NDArray[np.intp], vector: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """The cosines of ``docs``: float32 rows times the query summed in float64, one rounding."""
        prod = self.rows(docs).astype(np.float64)
        prod *= vector.astype(np.float64)
        sums: npt.NDArray[np.float64] = prod.sum(axis=1)
        return sums.astype(np.float32)

    def screen(
        self, vectors: Sequence[npt.NDArray[np.float32]], present: npt.NDArray[np.bool_]
    ) -> list[Screen]:
        """Every row's cosine to within a bound, for each query vector (one pass over the codes).

        The query's second row quantises the first's remainder with a step of exactly a 64th of
        the first's, so the two int32 products combine into one integer (``64 r1 + r2``) and one
        float32 scaling per row gives the screened cosine.
        """
        if not vectors:
            return []
        if self._dot is None:
            return [self._float_screen(v, present) for v in vectors]
        rows = np.empty((2 * len(vectors), self.dim), dtype=np.uint8)
        steps: list[tuple[float, float]] = []
        for k, vec in enumerate(vectors):
            q = vec.astype(np.float64)
            step = _step(q)
            first = np.rint(q / step).clip(-_ROW_LEVELS, _ROW_LEVELS)
            rest = q - step * first
            second = np.rint(rest / (step / _FINE)).clip(-_ROW_LEVELS, _ROW_LEVELS)
            left = float(np.linalg.norm(rest - step / _FINE * second))
            rows[2 * k] = (first + ZERO_POINT).astype(np.uint8)
            rows[2 * k + 1] = (second + ZERO_POINT).astype(np.uint8)
            steps.append((step, self._reach * left + _ROUNDING * (1.0 + float(np.linalg.norm(q)))))
        products = self._dot(rows).astype(self._wide, copy=False)
        out: list[Screen] = []
        for k, (step, bound) in enumerate(steps):
            combined = products[2 * k] * int(_FINE)
            combined += products[2 * k + 1]
            values = combined.astype(np.float32)
            values *= self._unit * np.float32(step / _FINE)
            out.append(Screen(vectors[k], _absent(values, present), bound))
        return out

    def _float_screen(self, vector: npt.NDArray[np.float32], present: npt.NDArray[np.bool_]) -> Screen:
        if self._matrix is None:
            self._matrix = self.rows(np.arange(len(self), dtype=np.intp))
        values = self._matrix @ vector
        bound = _FLOAT_SCREEN * (1.0 + self._reach * float(np.linalg.norm(vector)))
        return Screen(vector, _absent(values, present), bound)

    def best(
        self,
        screen: Screen,
        count: int,
        visible: Callable[[npt.NDArray[np.intp], int], list[int]],
        present_count: int,
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        """The ``count`` best visible docs by exact cosine (ties by doc number) and their cosines.

        ``visible(order, count)`` is the first ``count`` visible docs of ``order``; ``present_count``
        the rows that have a vector (a cut never needs to look past them).
        """
        values = screen.values
        want = min(count, present_count)
        if want <= 0:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
        while True:
            order = top_order(values, want)
            first = [d for d in visible(order, count) if values[d] > -np.inf]
            if len(first) >= count or want >= present_count:
                break
            want *= 4
        if not first:
            return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
        docs = np.asarray(first, dtype=np.intp)
        if len(first) >= count:
            # Each of these has an exact cosine above its screen less the bound, so the count-th best
            # exact cosine is above their lowest screen less the bound, and a doc reaching it screens
            # above that less the bound again.
            floor = float(values[docs].min()) - 2 * screen.bound
            wider = np.flatnonzero(values >= floor)
            docs = np.asarray(visible(wider, len(wider)), dtype=np.intp)
        cosines = self.exact(docs, screen.vector)
        order = np.lexsort((docs, -cosines))[:count]
        return docs[order], cosines[order]


def _step(values: npt.NDArray[np.float64]) -> float:
    top = float(np.abs(values).max()) if len(values) else 0.0
    return top / _ROW_LEVELS if top > 0 else 1.0


def _absent(values: npt.NDArray[np.float32], present: npt.NDArray[np.bool_]) -> npt.NDArray[np.float32]:
    if present.all():
        return values
    return np.where(present, values, np.float32(-np.inf))
