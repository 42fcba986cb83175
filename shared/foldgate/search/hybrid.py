"""Query time of hybrid search: the lexical (BM25F) and dense (embedding) signals fused into one page.

Per query: encode it once with the provider, take the dot product with every tool vector (numpy,
~0.7 ms on 11k tools; the needs of one request are encoded side by side and multiplied together, see
:meth:`HybridSearcher.search_many`), normalise both signals into [0, 1] over the tools the caller may
see, fuse them with a weight and return the best ``limit`` visible tools as :class:`SearchHit` (the
same shape as :meth:`SearchIndex.search`).

Normalisation (each chosen on the tuning sets, see the README's search section):

- lexical: ``score / best visible score`` (BM25F scores start at 0: an unmatched tool is 0);
- dense: min-max between the best visible cosine and the ``pool``-th best visible cosine, clipped
  at 0. Anchoring the low end to a rank rather than to the catalog's worst tool keeps the dense
  spread, and so the meaning of the weight, the same on a 40-tool and an 11,000-tool catalog.

Visibility: ``allowed`` is applied before anything is normalised or cut, so both normalisers and
the page depend only on tools the caller may see; a hidden tool cannot move a visible tool's score
through fusion. The lexical scores' own statistics (idf, average field lengths) are the catalog's
in a searcher over the whole catalog; :meth:`HybridSearcher.scoped` is the searcher of a caller who
sees only some tools, whose lexical statistics come from those tools alone and whose dense side
never ranks another tool (:mod:`foldgate.search.scope`). Cuts by rank include every tool tied with
the last one kept, so which of equal values a partition kept never decides a page.

Any failure on the dense side (provider down, wrong model, odd vector) answers that query lexically;
nothing here raises on hostile queries.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable, Collection, Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from foldgate.search.dense import DenseIndex
from foldgate.search.embed import Embedder
from foldgate.search.index import SearchHit, SearchIndex
from foldgate.search.queryvec import encode_side_by_side

__all__ = ["DEFAULT_POOL", "DEFAULT_WEIGHT", "Fusion", "HybridSearcher", "similarities"]

log = logging.getLogger(__name__)

Fusion = Literal["minmax", "rrf"]

# Weight of the dense signal (1 - weight goes to lexical), chosen on the tuning sets only (mcpproxy
# golden, MCPToolBench++). Golden nDCG@10 / MCPToolBench++ R@5 by weight at pool 50: 0.4 → 0.826 /
# 0.966, 0.5 → 0.841 / 0.973, 0.6 → 0.855 / 0.974, 0.7 → 0.859 / 0.956; 0.6 with pools 40-70 is the
# middle of the region meeting every target (golden R@5 ≥ 0.90, nDCG@10 ≥ 0.85, MCPToolBench++ R@5
# ≥ 0.96). Weighted RRF met them at no single weight (golden needs ≥ 0.8, MCPToolBench++ ≤ 0.6).
DEFAULT_WEIGHT = 0.6
# The dense normaliser's low anchor: the pool-th best visible cosine.
DEFAULT_POOL = 50
# Reciprocal rank fusion's constant (the usual 60), for the measured alternative.
_RRF_K = 60
# A query with no letter or digit has no meaning to embed; it gets the lexical answer (none).
_WORDY = re.compile(r"[^\W_]")
_MAX_QUERY_CHARS = 4096
# Rows of the tool matrix per block of a several-query product (512 x 384 float32 = 768 KB, which
# stays in a core's L2 cache while every query is multiplied with it). One OpenBLAS sgemm of the
# whole 11,406 x 384 matrix with 2-4 query columns packs and streams the 17.5 MB matrix and took
# 1.6-2.2 ms (one gemv per query: 0.7 ms each); in blocks of 512 rows 0.7-1.1 ms for 2-4 queries
# (256-768 rows within ±0.1 ms; 768 doubled at 4 queries), OPENBLAS_NUM_THREADS=1.
_BLOCK_ROWS = 512


class _Visible:
    """``allowed`` evaluated lazily per doc and cached for the query (it may be a costly predicate)."""

    __slots__ = ("_allowed", "_keys", "_seen", "everything")

    def __init__(self, keys: list[str], allowed: Callable[[str], bool] | None) -> None:
        self._keys = keys
        self._allowed = allowed
        self._seen: dict[int, bool] = {}
        # No predicate: every doc is visible, and the callers take the vectorised shortcuts.
        self.everything = allowed is None

    def __call__(self, doc: int) -> bool:
        if self._allowed is None:
            return True
        ok = self._seen.get(doc)
        if ok is None:
            ok = self._seen[doc] = bool(self._allowed(self._keys[doc]))
        return ok

    def first(self, order: npt.NDArray[np.intp], count: int) -> list[int]:
        """The first ``count`` visible docs of ``order``."""
        out: list[int] = []
        for doc in order.tolist():
            if self(doc):
                out.append(doc)
                if len(out) >= count:
                    break
        return out


def similarities(
    matrix: npt.NDArray[np.float32], vectors: Sequence[npt.NDArray[np.float32]]
) -> npt.NDArray[np.float32]:
    """``matrix @ v`` for each query vector, one row per vector (``len(vectors) x len(matrix)``).

    One vector is a single gemv; several are multiplied block by block (:data:`_BLOCK_ROWS` rows)
    so the matrix is read from memory once for all of them, at about the cost of one gemv.
    """
    if len(vectors) == 1:
        return (matrix @ vectors[0])[None, :]
    queries = np.stack(vectors, axis=1).astype(np.float32, copy=False)
    out = np.empty((len(matrix), len(vectors)), dtype=np.float32)
    for start in range(0, len(matrix), _BLOCK_ROWS):
        stop = start + _BLOCK_ROWS
        np.dot(matrix[start:stop], queries, out=out[start:stop])
    # Each query's cosines contiguous: the fusion reads them whole, several times.
    return np.ascontiguousarray(out.T)


def _top_order(values: npt.NDArray[np.float32], count: int) -> npt.NDArray[np.intp]:
    """Doc numbers of the ``count`` largest values, best first, ties by doc number."""
    n = len(values)
    if count <= 0:
        return np.zeros(0, dtype=np.intp)
    if count >= n:
        return np.lexsort((np.arange(n), -values))
    part = np.argpartition(-values, count)[:count]
    # Every doc tied with the last one kept too (so possibly more than ``count``): the order is then
    # a prefix of the full order, whatever equal values the partition happened to keep.
    part = np.flatnonzero(values >= values[part].min())
    return part[np.lexsort((part, -values[part]))]


class HybridSearcher:
    """Hybrid search over one catalog version: build once per version, call :meth:`search` per query."""

    def __init__(
        self,
        lexical: SearchIndex,
        dense: DenseIndex | None,
        provider: Embedder,
        *,
        weight: float = DEFAULT_WEIGHT,
        pool: int = DEFAULT_POOL,
        fusion: Fusion = "minmax",
    ) -> None:
        """Align ``dense`` to ``lexical``'s doc numbers by key (a few ms on 11k tools).

        ``weight`` in [0, 1] is the dense share (0: lexical only, 1: dense only). Without a usable
        dense index (None, or built by another provider/model than ``provider``), every query is
        answered lexically and :attr:`reason` says why.
        """
        self._lexical = lexical
        self._provider = provider
        self.weight = min(1.0, max(0.0, float(weight)))
        self.pool = max(1, int(pool))
        self.fusion: Fusion = fusion
        self._keys = list(lexical.keys)
        self._positions = {key: doc for doc, key in enumerate(self._keys)}
        self._matrix: npt.NDArray[np.float32] | None = None
        self._present: npt.NDArray[np.bool_] | None = None
        # Every tool has a vector (the usual case): no masking per query.
        self._complete = False
        self.reason = ""
        # Queries answered lexically because the dense side failed at query time.
        self.fallbacks = 0
        if dense is None:
            self.reason = f"no dense index (provider {provider.name})"
        elif not dense.compatible(provider):
            self.reason = f"dense index is {dense.model_id!r}, provider is {provider.model_id!r}"
        elif self.weight > 0:
            self._matrix, self._present = self._align(dense)
            self._complete = bool(self._present.all())
        # Docs with a vector: a cut by cosine never needs to look past them.
        self._vectors = int(np.count_nonzero(self._present)) if self._present is not None else 0

    def _align(self, dense: DenseIndex) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """Dense rows in lexical doc order; a tool without a row has a zero vector, marked absent."""
        if dense.keys == self._keys:
            # The indexer builds both from the same tool list: same order, nothing to permute or copy.
            return dense.matrix, dense.present
        row = {k: i for i, k in enumerate(dense.keys)}
        rows = np.fromiter((row.get(k, -1) for k in self._keys), dtype=np.intp, count=len(self._keys))
        found = rows >= 0
        matrix = np.zeros((len(self._keys), dense.dim), dtype=np.float32)
        matrix[found] = dense.matrix[rows[found]]
        present = np.zeros(len(self._keys), dtype=bool)
        present[found] = dense.present[rows[found]]
        return matrix, present

    def scoped(self, keys: Collection[str]) -> HybridSearcher:
        """This searcher for a caller who sees only the tools ``keys`` (see :meth:`SearchIndex.scoped`).

        The lexical side ranks with the scope's statistics; the dense side treats every other tool
        as having no vector, so it is never an anchor or a hit. Every tool in ``keys``: ``self``.
        """
        lexical = self._lexical.scoped(keys)
        if lexical is self._lexical:
            return self
        view = copy.copy(self)
        view._lexical = lexical
        if self._present is not None:
            inside = np.zeros(len(self._keys), dtype=bool)
            inside[[doc for key in keys if (doc := self._positions.get(key)) is not None]] = True
            view._present = self._present & inside
            view._complete = False
            view._vectors = int(np.count_nonzero(view._present))
        return view

    @property
    def mode(self) -> str:
        """``hybrid`` (or ``dense`` at weight 1) when the dense signal is in use, else ``lexical``."""
        if self._matrix is None:
            return "lexical"
        return "dense" if self.weight >= 1.0 else "hybrid"

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        """The ``limit`` best tools for ``query`` among those ``allowed`` (a key predicate), best first.

        Scores are the fused value in [0, 1]. Never raises: the dense side failing means this query
        is answered exactly as :meth:`SearchIndex.search` would.
        """
        return self.search_many([query], limit=limit, allowed=allowed)[0]

    def search_many(
        self,
        queries: Sequence[str],
        *,
        limit: int = 10,
        allowed: Callable[[str], bool] | None = None,
        lexical_only: Collection[int] = (),
    ) -> list[list[SearchHit]]:
        """:meth:`search` for several queries of one request (the needs of a multi-need request).

        Each query is encoded on its own (see :class:`~foldgate.search.embed.LocalEmbedder`), several
        side by side (:func:`~foldgate.search.queryvec.encode_side_by_side`) while this thread scores
        them lexically; then all are scored against the tool vectors together (:func:`similarities`):
        the 11k x 384 matrix is read once per request instead of once per need. ``allowed`` is asked
        once per tool for the request.
        """
        texts = [q[:_MAX_QUERY_CHARS] if isinstance(q, str) else "" for q in queries]
        if limit <= 0:
            return [[] for _ in texts]
        if self._matrix is None:
            return [self._lexical.search(t, limit=limit, allowed=allowed) for t in texts]
        dim = self._matrix.shape[1]
        dense_ones = [i for i, t in enumerate(texts) if i not in lexical_only and _WORDY.search(t)]
        pending = encode_side_by_side(self._provider, [texts[i] for i in dense_ones], dim)
        # All the lexical work is done while the needs are encoded (onnxruntime runs without the GIL).
        visible = _Visible(self._keys, allowed)
        lexical_pages = {
            i: self._lexical.search(t, limit=limit, allowed=allowed)
            for i, t in enumerate(texts)
            if i not in dense_ones
        }
        lexical = self.weight < 1.0
        lexes = {i: self._lexical_vector(texts[i], visible) if lexical else None for i in dense_ones}
        vectors: dict[int, npt.NDArray[np.float32]] = {}
        for i, vec in zip(dense_ones, pending.result(), strict=True):
            if isinstance(vec, Exception):
                self.fallbacks += 1
                log.debug("dense side failed, answering lexically: %s", vec)
                lexical_pages[i] = self._lexical.search(texts[i], limit=limit, allowed=allowed)
            else:
                vectors[i] = vec
        rows: dict[int, npt.NDArray[np.float32]] = {}
        if vectors:
            rows = dict(zip(vectors, similarities(self._matrix, list(vectors.values())), strict=True))
        return [
            lexical_pages[i] if i in lexical_pages else self._fused(rows[i], lexes[i], limit, visible)
            for i in range(len(texts))
        ]

    def _fused(
        self,
        dense: npt.NDArray[np.float32],
        lex: tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]] | None,
        limit: int,
        visible: _Visible,
    ) -> list[SearchHit]:
        if self.fusion == "rrf":
            fused = self._rrf(dense, lex, visible)
        else:
            fused = self._minmax(dense, lex, visible)
        return self._page(fused, limit, visible)

    def _lexical_vector(
        self, text: str, visible: _Visible
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]:
        """BM25F score of every doc (as :meth:`SearchIndex.scores`, name boosts included) and the
        docs that matched, with the name boosts sized on the tools this caller may see."""
        return self._lexical.score_vector(text, lambda acc, docs: self._best_visible(acc, docs, visible))

    @staticmethod
    def _best_visible(
        values: npt.NDArray[np.float64], docs: npt.NDArray[np.intp], visible: _Visible
    ) -> float:
        """The largest value among visible ``docs`` (0 when none is visible)."""
        if not len(docs):
            return 0.0
        if visible.everything:
            return float(values[docs].max())
        vals = values[docs]
        for i in np.argsort(-vals, kind="stable").tolist():
            if visible(int(docs[i])):
                return float(vals[i])
        return 0.0

    def _dense_order(self, dense: npt.NDArray[np.float32], visible: _Visible, count: int) -> list[int]:
        """The ``count`` best visible docs by cosine (fewer if the catalog has fewer)."""
        assert self._present is not None
        masked = dense if self._complete else np.where(self._present, dense, np.float32(-np.inf))
        want = min(count, self._vectors)
        while True:
            order = _top_order(masked, want)
            docs = [d for d in visible.first(order, count) if self._present[d]]
            if len(docs) >= count or want >= self._vectors:
                return docs
            want *= 4

    def _minmax(
        self,
        dense: npt.NDArray[np.float32],
        lex: tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]] | None,
        visible: _Visible,
    ) -> npt.NDArray[np.float32]:
        assert self._present is not None
        n = len(dense)
        fused = np.zeros(n, dtype=np.float32)
        anchors = self._dense_order(dense, visible, self.pool)
        if anchors:
            hi, lo = float(dense[anchors[0]]), float(dense[anchors[-1]])
            span = hi - lo if hi > lo else 1.0
            dn = np.clip((dense - lo) / np.float32(span), 0.0, 1.0)
            if not self._complete:
                dn[~self._present] = 0.0
            fused += np.float32(self.weight) * dn
        if lex is not None and len(lex[1]):
            acc, docs = lex
            best = self._best_visible(acc, docs, visible)
            if best > 0:
                fused[docs] += (np.float32((1.0 - self.weight) / best) * acc[docs]).astype(np.float32)
        return fused

    def _rrf(
        self,
        dense: npt.NDArray[np.float32],
        lex: tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]] | None,
        visible: _Visible,
    ) -> npt.NDArray[np.float32]:
        """Weighted reciprocal rank fusion over visible docs (measured: below min-max here)."""
        fused = np.zeros(len(dense), dtype=np.float32)
        depth = max(self.pool, 100)
        for rank, doc in enumerate(self._dense_order(dense, visible, depth)):
            fused[doc] += self.weight / (_RRF_K + rank + 1)
        if lex is not None:
            acc, docs = lex
            ranked = docs[np.lexsort((docs, -acc[docs]))].tolist()
            rank = 0
            for doc in ranked:
                if visible(doc):
                    fused[doc] += (1.0 - self.weight) / (_RRF_K + rank + 1)
                    rank += 1
                    if rank >= depth:
                        break
        return fused

    def _page(self, fused: npt.NDArray[np.float32], limit: int, visible: _Visible) -> list[SearchHit]:
        candidates = int(np.count_nonzero(fused > 0))
        if not candidates:
            return []
        want = min(candidates, max(4 * limit, 50))
        while True:
            order = _top_order(fused, want)
            docs = [d for d in visible.first(order, limit) if fused[d] > 0]
            if len(docs) >= limit or want >= candidates:
                return [SearchHit(self._keys[d], round(float(fused[d]), 6)) for d in docs[:limit]]
            want = min(candidates, want * 4)
