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

    ``tfs`` is field-major: one row of a count per posting (in posting order) for each used field;
    ``lengths`` likewise one row of a length per doc.
    """

    used: Sequence[int]
    tfs: Sequence[int]
    lengths: Sequence[int]

    def arrays(self, postings: int, docs: int) -> tuple[npt.NDArray[np.integer], npt.NDArray[np.integer]]:
        """``tfs`` as (used fields x postings) and ``lengths`` as (used fields x docs) arrays."""
        rows = len(self.used)
        return np.asarray(self.tfs).reshape(rows, postings), np.asarray(self.lengths).reshape(rows, docs)

    def to_doc(self) -> dict[str, Any]:
        """The keys a serialised index (format 2) adds: packed arrays, mostly zeros (zlib likes them)."""
        tf_width = width_for(max(self.tfs, default=0))
        len_width = width_for(max(self.lengths, default=0))
        return {
            "fields": list(self.used),
            "tfs": pack(self.tfs, tf_width),
            "tfs_w": tf_width,
            "lengths": pack(self.lengths, len_width),
            "lengths_w": len_width,
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> FieldCounts:
        """Inverse of :meth:`to_doc` (lengths are checked by the index that holds them)."""
        return cls(
            used=[int(f) for f in doc["fields"]],
            tfs=unpack(doc["tfs"], doc["tfs_w"]),
            lengths=unpack(doc["lengths"], doc["lengths_w"]),
        )


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
    tfs: npt.NDArray[np.integer],
    lengths: npt.NDArray[np.integer],
    used: Sequence[int],
    mask: npt.NDArray[np.bool_],
) -> ScopedPostings:
    """The postings of the docs in ``mask``, saturated over those docs' average field lengths.

    ``docs`` is every posting's doc number; ``tfs`` (used fields x postings) and ``lengths`` (used
    fields x docs) are :class:`FieldCounts` as arrays. Each step mirrors build_search_index so the
    levels are bit-for-bit the ones a build over the visible tools alone would store.
    """
    keep = mask[docs]
    kept = docs[keep]
    ends = np.concatenate(([0], np.cumsum(keep, dtype=np.intp)))
    new_offsets = [int(x) for x in ends[np.asarray(offsets, dtype=np.intp)]]
    count = int(np.count_nonzero(mask))
    weights, bs = config.field_params()
    tfn = np.zeros(len(kept), dtype=np.float64)
    for row, f in enumerate(used):
        # Python ints: the sum and the division round exactly as build's sum(...) / n does.
        total = int(lengths[row][mask].sum(dtype=np.int64))
        avg = total / count if count else 0.0
        if weights[f] <= 0 or avg <= 0:
            continue
        norm = weights[f] / (1 - bs[f] + bs[f] * lengths[row].astype(np.float64) / avg)
        # A zero count adds 0.0, which leaves the sum exactly as build's sum over nonzero counts.
        tfn += norm[kept] * tfs[row][keep]
    sat_max = config.k1 + 1
    sat = tfn * sat_max / (config.k1 + tfn)
    return ScopedPostings(new_offsets, kept, quantise(sat, sat_max), count)
