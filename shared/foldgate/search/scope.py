"""A caller's scope of the lexical index: BM25F statistics over only the tools the caller may see.

BM25F has two statistics drawn from the catalog: a term's document frequency (its idf) and each
field's average length (in the length normalisation inside every stored saturation). Drawn from the
whole tenant catalog, words in tools a caller cannot see would move the order of the tools it can.
A scope keeps the postings of the visible tools only and redoes both statistics over them, with the
same floating-point steps and the same 8-bit levels as :func:`~foldgate.search.build_search_index`:
a caller's ranking is exactly the ranking of a catalog that holds only its tools.

For that the index stores each posting's raw term count per field and each tool's field lengths
(:class:`FieldCounts`); a scope costs one pass over the postings (a few ms on 11k tools) and is
built once per distinct visible set, not per query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from foldgate.search.codec import pack, unpack, width_for
from foldgate.search.config import SearchConfig

__all__ = ["FieldCounts", "ScopedPostings", "scope_postings"]

# Stored term saturations are integers 0..SATURATION_LEVELS standing for 0..k1+1 (index.py re-exports it).
SATURATION_LEVELS = 255


@dataclass(frozen=True, slots=True)
class FieldCounts:
    """The raw inputs of the length normalisation, per field with a weight (``used``, field order).

    ``tfs`` has one row per used field of a count per posting (posting order); ``lengths`` one row
    per used field of a length per doc. The rows are mostly zeros and compress well: on 11k tools
    they add ~3 MB of JSON but ~0.26 MB zlib to the index's 2.1 MB / 0.83 MB.
    """

    used: Sequence[int]
    tfs: Sequence[Sequence[int]]
    lengths: Sequence[Sequence[int]]

    def valid(self, postings: int, docs: int) -> bool:
        """Whether the rows fit an index of this many postings and docs."""
        rows = len(self.used)
        return (
            len(self.tfs) == rows
            and len(self.lengths) == rows
            and all(len(row) == postings for row in self.tfs)
            and all(len(row) == docs for row in self.lengths)
        )

    def to_doc(self) -> dict[str, Any]:
        """The keys a serialised index (format 2) adds: each row packed at its own width."""
        return {"fields": list(self.used), "tfs": _packed(self.tfs), "lengths": _packed(self.lengths)}

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> FieldCounts:
        """Inverse of :meth:`to_doc` (sizes are checked by the index that holds them: :meth:`valid`)."""
        return cls(
            used=[int(f) for f in doc["fields"]],
            tfs=[unpack(text, width) for text, width in doc["tfs"]],
            lengths=[unpack(text, width) for text, width in doc["lengths"]],
        )


def _packed(rows: Sequence[Sequence[int]]) -> list[list[str]]:
    out = []
    for row in rows:
        width = width_for(max(row, default=0))
        out.append([pack(row, width), width])
    return out


@dataclass(frozen=True, slots=True)
class ScopedPostings:
    """The postings of the visible docs and their saturations over the scope's statistics."""

    # Term t's postings are docs[offsets[t]:offsets[t + 1]]; its scope df is the slice's length.
    offsets: list[int]
    docs: npt.NDArray[np.intp]
    sats: npt.NDArray[np.float64]
    # How many docs the scope holds (BM25's N).
    count: int


def quantise(sat: npt.NDArray[np.float64], sat_max: float) -> npt.NDArray[np.float64]:
    """Saturations in [0, ``sat_max``) as the stored levels (at least 1 for any match), as build does."""
    levels = np.rint(sat / sat_max * SATURATION_LEVELS)
    return np.where(sat > 0, np.maximum(levels, 1.0), 0.0)


def scope_postings(
    *,
    config: SearchConfig,
    docs: npt.NDArray[np.intp],
    offsets: Sequence[int],
    fields: FieldCounts,
    mask: npt.NDArray[np.bool_],
) -> ScopedPostings:
    """The postings of the docs in ``mask``, saturated over those docs' average field lengths.

    ``docs`` is every posting's doc number. Each step mirrors build_search_index so the levels are
    bit-for-bit the ones a build over the visible tools alone would store.
    """
    keep = mask[docs]
    kept = docs[keep]
    ends = np.concatenate(([0], np.cumsum(keep, dtype=np.intp)))
    new_offsets: list[int] = ends[np.asarray(offsets, dtype=np.intp)].tolist()
    count = int(np.count_nonzero(mask))
    weights, bs = config.field_params()
    tfn = np.zeros(len(kept), dtype=np.float64)
    for row, f in enumerate(fields.used):
        lengths = np.asarray(fields.lengths[row], dtype=np.int64)
        # Python ints: the sum and the division round exactly as build's sum(...) / n does.
        total = int(lengths[mask].sum())
        avg = total / count if count else 0.0
        if weights[f] <= 0 or avg <= 0:
            continue
        norm = weights[f] / (1 - bs[f] + bs[f] * lengths.astype(np.float64) / avg)
        tfs = np.asarray(fields.tfs[row])[keep]
        # A zero count adds 0.0, which leaves the sum exactly as build's sum over nonzero counts.
        tfn += norm[kept] * tfs
    sat_max = config.k1 + 1
    sat = tfn * sat_max / (config.k1 + tfn)
    return ScopedPostings(new_offsets, kept, quantise(sat, sat_max), count)
