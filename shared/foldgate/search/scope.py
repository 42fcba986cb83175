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

from foldgate.search.codec import IndexFormatError, pack, unpack, width_for
from foldgate.search.config import SearchConfig

__all__ = ["FieldCounts", "ScopedPostings", "scope_postings"]

# Stored term saturations are integers 0..SATURATION_LEVELS standing for 0..k1+1 (index.py re-exports it).
SATURATION_LEVELS = 255


# A row of counts: lists from the builder, arrays at their stored width once loaded.
Row = Sequence[int] | npt.NDArray[np.unsignedinteger[Any]]
_BYTES = {"B": 1, "H": 2, "I": 4, "Q": 8}
_DTYPES = {"B": np.uint8, "H": np.uint16, "I": np.uint32, "Q": np.uint64}


@dataclass(frozen=True, slots=True)
class FieldCounts:
    """The raw inputs of the length normalisation, per field with a weight (``used``, field order).

    ``tfs`` has one row per used field of a count per posting (posting order); ``lengths`` one row
    per used field of a length per doc. Most counts are zero (a term is in one or two fields of a
    tool), so a row is stored sparse (gaps between nonzero positions, and their values) whenever
    that is smaller than the plain row.
    """

    used: Sequence[int]
    tfs: Sequence[Row]
    lengths: Sequence[Row]

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
        """The keys a serialised index (format 2) adds: each row packed plain or sparse."""
        return {
            "fields": list(self.used),
            "tfs": [_pack_row(row) for row in self.tfs],
            "lengths": [_pack_row(row) for row in self.lengths],
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any], postings: int, docs: int) -> FieldCounts:
        """Inverse of :meth:`to_doc` for an index of this many postings and docs."""
        return cls(
            used=[int(f) for f in doc["fields"]],
            tfs=[_unpack_row(item, postings) for item in doc["tfs"]],
            lengths=[_unpack_row(item, docs) for item in doc["lengths"]],
        )


def _pack_row(row: Row) -> list[str]:
    values = np.asarray(row, dtype=np.int64)
    width = width_for(int(values.max(initial=0)))
    nonzero = np.flatnonzero(values)
    gaps = np.diff(nonzero, prepend=0)
    gap_width = width_for(int(gaps.max(initial=0)))
    if len(nonzero) * (_BYTES[gap_width] + _BYTES[width]) < len(values) * _BYTES[width]:
        sparse = pack(values[nonzero].tolist(), width)
        return ["sparse", pack(gaps.tolist(), gap_width), gap_width, sparse, width]
    return ["plain", pack(values.tolist(), width), width]


def _unpack_row(item: Any, length: int) -> npt.NDArray[np.unsignedinteger[Any]]:
    """A row from :func:`_pack_row` at its stored width; raises IndexFormatError when it is malformed
    (its length is checked by :meth:`FieldCounts.valid`)."""
    if isinstance(item, list) and len(item) == 3 and item[0] == "plain":
        return np.asarray(unpack(item[1], item[2]), dtype=_DTYPES[item[2]])
    if not (isinstance(item, list) and len(item) == 5 and item[0] == "sparse"):
        raise IndexFormatError("field counts: a row is neither plain nor sparse")
    positions = np.cumsum(np.asarray(unpack(item[1], item[2]), dtype=np.int64))
    values = np.asarray(unpack(item[3], item[4]), dtype=_DTYPES[item[4]])
    if len(positions) != len(values) or (len(positions) and not 0 <= positions[0] <= positions[-1] < length):
        raise IndexFormatError("field counts: a sparse row does not fit its index")
    row = np.zeros(length, dtype=values.dtype)
    row[positions] = values
    return row


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
        lengths = np.asarray(fields.lengths[row])
        # Python ints: the sum and the division round exactly as build's sum(...) / n does.
        total = int(lengths[mask].sum(dtype=np.uint64))
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
