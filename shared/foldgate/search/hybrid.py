"""Query time of hybrid search: the lexical (BM25F) and dense (embedding) signals fused into one page.

Per query: encode it once with the provider, find the tools with the best cosines (an int8 screen of
every tool vector, then exact cosines for the few that can rank: :mod:`foldgate.search.cosine`; the
needs of one request are encoded side by side and screened together, see
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
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from foldgate.search.cosine import CosineTable, Screen, top_order
from foldgate.search.dense import DenseIndex
from foldgate.search.embed import Embedder
from foldgate.search.index import SearchHit, SearchIndex
from foldgate.search.queryvec import encode_side_by_side

__all__ = ["DEFAULT_POOL", "DEFAULT_WEIGHT", "Fusion", "HybridSearcher"]

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
_ZERO = np.float32(0.0)


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


# The cut by rank, shared with the cosine table (tests pin it here too).
_top_order = top_order


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
        self._table: CosineTable | None = None
        # Per doc: whether it has a vector this searcher may rank (a scope clears the others).
        self._present: npt.NDArray[np.bool_] | None = None
        self.reason = ""
        # Queries answered lexically because the dense side failed at query time.
        self.fallbacks = 0
        if dense is None:
            self.reason = f"no dense index (provider {provider.name})"
        elif not dense.compatible(provider):
            self.reason = f"dense index is {dense.model_id!r}, provider is {provider.model_id!r}"
        elif self.weight > 0:
            self._table = self._align(dense)
            self._present = self._table.present
        # Docs with a vector: a cut by cosine never needs to look past them.
        self._vectors = int(np.count_nonzero(self._present)) if self._present is not None else 0

    def _align(self, dense: DenseIndex) -> CosineTable:
        """Dense rows in lexical doc order; a tool without a row has zero codes and scale (absent)."""
        if dense.keys == self._keys:
            # The indexer builds both from the same tool list: the version's own table, shared.
            return dense.cosines
        row = {k: i for i, k in enumerate(dense.keys)}
        rows = np.fromiter((row.get(k, -1) for k in self._keys), dtype=np.intp, count=len(self._keys))
        found = rows >= 0
        codes = np.zeros((len(self._keys), dense.dim), dtype=np.int8)
        codes[found] = dense.codes[rows[found]]
        scales = np.zeros(len(self._keys), dtype=np.float32)
        scales[found] = dense.scales[rows[found]]
        return CosineTable(codes, scales)

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
            view._vectors = int(np.count_nonzero(view._present))
        return view

    @property
    def provider(self) -> Embedder:
        """The query encoder."""
        return self._provider

    @property
    def cosines(self) -> CosineTable | None:
        """The tool vectors as queries read them (None when every query is answered lexically)."""
        return self._table

    @property
    def mode(self) -> str:
        """``hybrid`` (or ``dense`` at weight 1) when the dense signal is in use, else ``lexical``."""
        if self._table is None:
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
        them lexically; then all are screened against the tool vectors together (one pass over the
        int8 codes, :class:`~foldgate.search.cosine.CosineTable`), and only the tools that can rank
        get exact cosines. ``allowed`` is asked once per tool for the request.
        """
        texts = [q[:_MAX_QUERY_CHARS] if isinstance(q, str) else "" for q in queries]
        if limit <= 0:
            return [[] for _ in texts]
        if self._table is None or self._present is None:
            return [self._lexical.search(t, limit=limit, allowed=allowed) for t in texts]
        dense_ones = [i for i, t in enumerate(texts) if i not in lexical_only and _WORDY.search(t)]
        pending = encode_side_by_side(self._provider, [texts[i] for i in dense_ones], self._table.dim)
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
        # One pass over the tool vectors for every need of the request.
        screens = dict(zip(vectors, self._table.screen(list(vectors.values()), self._present), strict=True))
        return [
            lexical_pages[i] if i in lexical_pages else self._fused(screens[i], lexes[i], limit, visible)
            for i in range(len(texts))
        ]

    def _fused(
        self,
        screen: Screen,
        lex: tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]] | None,
        limit: int,
        visible: _Visible,
    ) -> list[SearchHit]:
        if self.fusion == "rrf":
            fused = self._rrf(screen, lex, visible)
        else:
            fused = self._minmax(screen, lex, visible)
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

    def _dense_order(
        self, screen: Screen, visible: _Visible, count: int
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]:
        """The ``count`` best visible docs by cosine (fewer if the catalog has fewer), and their cosines."""
        assert self._table is not None
        return self._table.best(screen, count, visible.first, self._vectors)

    def _minmax(
        self,
        screen: Screen,
        lex: tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]] | None,
        visible: _Visible,
    ) -> _Fused:
        """The fused value of every doc that has one: the dense anchors and the lexical matches.

        Every other doc's dense signal is clipped to 0 (below the pool-th cosine) and it has no
        lexical score, so its fused value is 0. Each value is the float32 arithmetic of a whole
        catalog vector, element by element, on the docs that can be non-zero.
        """
        anchors, cosines = self._dense_order(screen, visible, self.pool)
        lex_docs = lex[1] if lex is not None else np.zeros(0, dtype=np.intp)
        # The lexical matches (ascending), then the anchors that matched nothing lexically.
        at = np.searchsorted(lex_docs, anchors)
        matched = at < len(lex_docs)
        matched[matched] = lex_docs[at[matched]] == anchors[matched]
        extra = anchors[~matched]
        at[~matched] = len(lex_docs) + np.arange(len(extra))
        docs = np.concatenate((lex_docs, extra)) if len(extra) else lex_docs
        fused = np.zeros(len(docs), dtype=np.float32)
        if len(anchors):
            hi, lo = float(cosines[0]), float(cosines[-1])
            span = hi - lo if hi > lo else 1.0
            dn = np.clip((cosines - lo) / np.float32(span), 0.0, 1.0)
            fused[at] += np.float32(self.weight) * dn
        if lex is not None and len(lex_docs):
            acc = lex[0]
            best = self._best_visible(acc, lex_docs, visible)
            if best > 0:
                fused[: len(lex_docs)] += (np.float32((1.0 - self.weight) / best) * acc[lex_docs]).astype(
                    np.float32
                )
        return _Fused(docs, fused)

    def _rrf(
        self,
        screen: Screen,
        lex: tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]] | None,
        visible: _Visible,
    ) -> _Fused:
        """Weighted reciprocal rank fusion over visible docs (measured: below min-max here)."""
        values: dict[int, np.float32] = {}
        depth = max(self.pool, 100)
        for rank, doc in enumerate(self._dense_order(screen, visible, depth)[0].tolist()):
            values[doc] = values.get(doc, _ZERO) + self.weight / (_RRF_K + rank + 1)
        if lex is not None:
            acc, docs = lex
            ranked = docs[np.lexsort((docs, -acc[docs]))].tolist()
            rank = 0
            for doc in ranked:
                if visible(doc):
                    values[doc] = values.get(doc, _ZERO) + (1.0 - self.weight) / (_RRF_K + rank + 1)
                    rank += 1
                    if rank >= depth:
                        break
        keys = np.asarray(sorted(values), dtype=np.intp)
        # Added up in float32, one addition at a time, as the whole-catalog vector added them.
        return _Fused(keys, np.asarray([values[d] for d in keys.tolist()], dtype=np.float32))

    def _page(self, fused: _Fused, limit: int, visible: _Visible) -> list[SearchHit]:
        """The first ``limit`` visible docs by fused value (ties by doc number), value above 0.

        Only a pool of the best values is ordered (it grows when visibility leaves fewer than a
        page), with every doc tied with the pool's last one, as the whole-catalog cut did.
        """
        values, docs = fused.values, fused.docs
        positive = int(np.count_nonzero(values > 0))
        if not positive:
            return []
        want = min(positive, max(4 * limit, 50))
        while True:
            if want >= len(values):
                part = np.arange(len(values))
            else:
                part = np.argpartition(-values, want)[:want]
                part = np.flatnonzero(values >= values[part].min())
            part = part[np.lexsort((docs[part], -values[part]))]
            hits: list[SearchHit] = []
            for doc, value in zip(docs[part].tolist(), values[part].tolist(), strict=True):
                if value <= 0:
                    break
                if visible(doc):
                    hits.append(SearchHit(self._keys[doc], round(value, 6)))
                    if len(hits) >= limit:
                        return hits
            if want >= positive:
                return hits
            want = min(positive, want * 4)


@dataclass(frozen=True, slots=True)
class _Fused:
    """Fused values of the docs that have one (each doc once, in any order); every other doc's is 0."""

    docs: npt.NDArray[np.intp]
    values: npt.NDArray[np.float32]
