"""The search index on the request path: load a serialised index cheaply, rank tools for a query.

Querying is two steps so that a second signal can join later without changing either:
:meth:`SearchIndex.scores` gives every matching tool (by doc number) its lexical score, and
:meth:`SearchIndex.rank` turns any such score map — this one, or a fusion of it with a dense one —
into a visibility-filtered page of hits. :meth:`SearchIndex.search` is the two together, on numpy
arrays (:meth:`SearchIndex.score_vector`, which the hybrid searcher shares) instead of a score map.
:meth:`SearchIndex.scoped` is the index a caller who sees only some tools searches: its statistics
come from those tools alone (:mod:`foldgate.search.scope`).
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from foldgate.search.analysis import analyze
from foldgate.search.codec import IndexFormatError, pack, unpack, width_for
from foldgate.search.config import SearchConfig
from foldgate.search.names import NameMatcher, name_form
from foldgate.search.scope import SATURATION_LEVELS, FieldCounts, scope_postings

__all__ = ["FORMAT_VERSION", "SATURATION_LEVELS", "SearchHit", "SearchIndex"]

# 2 adds the raw field counts a scope needs (FieldCounts); 1 still loads, without scopes.
FORMAT_VERSION = 2
_READABLE = (1, 2)
# Hostile queries are cut, not refused: the first 4 KB and 64 distinct known terms are plenty for
# intent. Terms are scored rarest first, and the commonest ones are skipped once a query has
# visited this many postings, so one query costs a few milliseconds at most on any catalog; the
# skipped terms have the lowest idf and typical queries never reach the budget.
_MAX_QUERY_CHARS = 4096
_MAX_QUERY_TERMS = 64
_POSTINGS_BUDGET = 40_000
# A query longer than this is a sentence, never a tool name: the name boosts do not look at it.
_MAX_NAME_CHARS = 256
_MAX_NAME_WORDS = 12
_MIN_POOL = 50
_POOL_FACTOR = 4


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: the tool's canonical ``server:tool`` key and its score (higher is better)."""

    key: str
    score: float


class SearchIndex:
    """An immutable lexical (BM25F) index of one catalog version; build it with ``build_search_index``."""

    def __init__(
        self,
        *,
        config: SearchConfig,
        servers: Sequence[str],
        doc_server: Sequence[int],
        names: Sequence[str],
        terms: Sequence[str],
        offsets: Sequence[int],
        gaps: Sequence[int],
        saturations: Sequence[int],
        fields: FieldCounts | None = None,
    ) -> None:
        """Assemble an index from its arrays (``build_search_index`` and :meth:`from_doc` call this).

        ``fields`` (the raw counts behind the saturations) makes :meth:`scoped` possible.
        """
        if (
            len(doc_server) != len(names)
            or len(offsets) != len(terms) + 1
            or len(gaps) != len(saturations)
            or (offsets and offsets[-1] != len(gaps))
            or (doc_server and max(doc_server) >= len(servers))
            or (
                fields is not None
                and (
                    not fields.valid(len(gaps), len(names))
                    or any(not 0 <= f < len(config.weights) for f in fields.used)
                )
            )
        ):
            raise IndexFormatError("search index arrays disagree in length or range")
        self._config = config
        self._servers = list(servers)
        self._doc_server = doc_server
        self._names = list(names)
        self._terms = list(terms)
        self._offsets = offsets
        self._gaps = gaps
        self._saturations = saturations
        self._fields = fields
        self._term_ids = dict(zip(self._terms, range(len(self._terms)), strict=True))
        self._keys = [f"{self._servers[s]}:{n}" for s, n in zip(doc_server, self._names, strict=True)]
        # The docs this index ranks (BM25's N) and, for a scoped index, which ones (None: all).
        self._count = len(self._keys)
        self._scope: npt.NDArray[np.bool_] | None = None

    # ---- facts -------------------------------------------------------------------------------

    @property
    def config(self) -> SearchConfig:
        """The parameters this index was built and ranks with."""
        return self._config

    @property
    def keys(self) -> Sequence[str]:
        """Canonical ``server:tool`` key of each doc number (the catalog order given to the builder)."""
        return self._keys

    def __len__(self) -> int:
        return len(self._keys)

    @cached_property
    def _matcher(self) -> NameMatcher:
        # Built on first use by a short query: sentences never need it, and it costs ~30 ms on 11k tools.
        return NameMatcher(self._names, self._servers, self._doc_server)

    # ---- scope -------------------------------------------------------------------------------

    @property
    def scopeable(self) -> bool:
        """Whether :meth:`scoped` works (an index stored in format 1 lacks the field counts)."""
        return self._fields is not None

    def scoped(self, keys: Iterable[str]) -> SearchIndex:
        """This index as a caller who sees only the tools ``keys`` searches it.

        Idf and the field-length normalisation come from those tools alone, so no tool outside them
        can move their order; hits, scores and ties are exactly those of an index built from those
        tools only. Doc numbers stay this index's. Every tool in ``keys``: this index itself.
        Raises ValueError when the index has no field counts (:attr:`scopeable`).
        """
        if self._fields is None:
            raise ValueError("search index without field counts (format 1): rebuild it to scope it")
        positions = self._positions
        mask = np.zeros(len(self._keys), dtype=bool)
        mask[[doc for key in keys if (doc := positions.get(key)) is not None]] = True
        if self._scope is not None:
            mask &= self._scope
            if np.array_equal(mask, self._scope):
                return self
        elif mask.all():
            return self
        base = self._base_index
        scoped = scope_postings(
            config=self._config,
            docs=base._decoded[0],
            offsets=base._offsets,
            fields=self._fields,
            mask=mask,
        )
        view = object.__new__(SearchIndex)
        view.__dict__.update(self.__dict__)
        # The name tables are the catalog's (shared, built once); the scope filters their answers.
        view.__dict__.pop("_matcher", None)
        view.__dict__["_base_index"] = self._base_index
        view._offsets = scoped.offsets
        view._count = scoped.count
        view._scope = mask
        view.__dict__["_decoded"] = (scoped.docs, scoped.sats)
        return view

    @cached_property
    def _base_index(self) -> SearchIndex:
        """The unscoped index this one derives from (itself when it is unscoped)."""
        return self

    @cached_property
    def _positions(self) -> dict[str, int]:
        return {key: doc for doc, key in enumerate(self._keys)}

    # ---- query -------------------------------------------------------------------------------

    def _query_terms(self, query: str) -> list[int]:
        """Known distinct terms of the query, rarest first, within the postings budget."""
        ids: set[int] = set()
        offsets = self._offsets
        for term in analyze(query[:_MAX_QUERY_CHARS], stemming=self._config.stemming):
            tid = self._term_ids.get(term)
            # Known means in a tool of this index's scope: a term of hidden tools takes no slot.
            if tid is not None and offsets[tid + 1] > offsets[tid]:
                ids.add(tid)
                if len(ids) >= _MAX_QUERY_TERMS:
                    break
        by_df = sorted(ids, key=lambda t: (offsets[t + 1] - offsets[t], t))
        chosen: list[int] = []
        visited = 0
        for tid in by_df:
            visited += offsets[tid + 1] - offsets[tid]
            if chosen and visited > _POSTINGS_BUDGET:
                break
            chosen.append(tid)
        return chosen

    def weighted_terms(self, query: str) -> list[tuple[int, int, float]]:
        """The query's scored terms as ``(lo, hi, weight)``: a slice of :attr:`postings` and its weight.

        A posting's score is its stored saturation times the weight; a doc's BM25F score is the sum
        over terms. This is what :meth:`scores` adds up, for a caller that adds it up vectorised.
        """
        n = self._count
        if not isinstance(query, str) or not n:
            return []
        offsets = self._offsets
        unit = (self._config.k1 + 1) / SATURATION_LEVELS
        out: list[tuple[int, int, float]] = []
        for tid in self._query_terms(query):
            lo, hi = offsets[tid], offsets[tid + 1]
            out.append((lo, hi, math.log(1 + (n - (hi - lo) + 0.5) / (hi - lo + 0.5)) * unit))
        return out

    def name_matches(self, query: str) -> list[tuple[float, list[int]]]:
        """``(boost, docs)`` pairs of the exact-name and prefix boosts for ``query`` ([] for sentences).

        Each listed doc gains ``boost`` times the best visible lexical score of the query.
        """
        cfg = self._config
        if not isinstance(query, str) or (cfg.exact_name_boost <= 0 and cfg.prefix_boost <= 0):
            return []
        form = name_form(query[:_MAX_NAME_CHARS])
        if not form or form.count(" ") >= _MAX_NAME_WORDS:
            return []
        matcher = self._base_index._matcher
        scope = self._scope
        out: list[tuple[float, list[int]]] = []
        if cfg.exact_name_boost > 0:
            exact = matcher.exact(form)
            out.append((cfg.exact_name_boost, exact if scope is None else [d for d in exact if scope[d]]))
        if cfg.prefix_boost > 0:
            # The prefix table's first 50 names within the scope, not the catalog's first 50.
            visible = None if scope is None else scope.item
            out.append((cfg.prefix_boost, matcher.prefix(form, visible=visible)))
        return out

    @cached_property
    def _decoded(self) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        """Every posting's doc number and saturation as arrays, decoded once per catalog version.

        Doc numbers are stored as gaps within each term's slice: a cumulative sum over all postings,
        less the sum reached before each slice, gives them back (~10 ms on 11k tools, first query).
        """
        starts = np.asarray(self._offsets, dtype=np.intp)
        total = np.cumsum(np.asarray(self._gaps, dtype=np.intp))
        before = np.concatenate(([0], total))[starts[:-1]]
        docs = total - np.repeat(before, np.diff(starts))
        return docs, np.asarray(self._saturations, dtype=np.float64)

    def score_vector(
        self, query: str, best: Callable[[npt.NDArray[np.float64], npt.NDArray[np.intp]], float]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]:
        """BM25F score of every doc (name boosts included) and the docs that matched, ascending.

        Term at a time in numpy: a query costs a few vector operations per term rather than a Python
        step per posting (a long request on 11k tools visits up to 40,000 postings). ``best(acc, docs)``
        is the best score the caller may see among ``docs``; it sizes the name boosts.
        """
        n = len(self._keys)
        acc = np.zeros(n, dtype=np.float64)
        touched = np.zeros(n, dtype=bool)
        terms = self.weighted_terms(query)
        if terms:
            docs, sats = self._decoded
            for lo, hi, weight in terms:
                slice_docs = docs[lo:hi]
                acc[slice_docs] += sats[lo:hi] * weight
                touched[slice_docs] = True
        boosts = self.name_matches(query)
        if boosts:
            # Sized on the tools the caller may see: a hidden tool must not move a visible tool's score.
            top = best(acc, np.flatnonzero(touched)) or 1.0
            for boost, boosted in boosts:
                if boosted:
                    acc[boosted] += boost * top
                    touched[boosted] = True
        return acc, np.flatnonzero(touched)

    def _matched(
        self, query: str, allowed: Callable[[str], bool] | None = None
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.intp]]:
        """BM25F score per doc and the docs that matched anything (ascending doc numbers)."""
        keys = self._keys

        def best(acc: npt.NDArray[np.float64], docs: npt.NDArray[np.intp]) -> float:
            if not len(docs):
                return 0.0
            vals = acc[docs]
            if allowed is None:
                return float(vals.max())
            for i in np.argsort(-vals, kind="stable").tolist():
                if allowed(keys[int(docs[i])]):
                    return float(vals[i])
            return 0.0

        if not isinstance(query, str) or not keys:
            return np.zeros(len(keys), dtype=np.float64), np.zeros(0, dtype=np.intp)
        return self.score_vector(query, best)

    def scores(self, query: str, *, allowed: Callable[[str], bool] | None = None) -> dict[int, float]:
        """Every matching doc's lexical score for ``query`` (name boosts included); {} if none matches.

        Doc numbers index :attr:`keys`. This is the lexical signal that a later fusion can combine
        with others before :meth:`rank`; ``rank(scores(q))`` equals ``search(q)``.
        """
        acc, touched = self._matched(query, allowed)
        return {doc: float(acc[doc]) for doc in touched.tolist()}

    def rank(
        self,
        scores: Mapping[int, float],
        *,
        limit: int = 10,
        allowed: Callable[[str], bool] | None = None,
    ) -> list[SearchHit]:
        """The best ``limit`` docs of a score map as hits, best first (server-aware when configured).

        ``allowed`` filters by key before the page is cut, so a caller gets a full page of tools it
        may see whenever that many match (and no score depends on a tool it may not see).
        """
        docs = scores.keys()
        value = scores.__getitem__

        def best_first(pool: int) -> list[int]:
            return heapq.nlargest(pool, docs, key=value)

        return self._rank(best_first, value, len(docs), limit, allowed)

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        """The ``limit`` best tools for ``query`` among those ``allowed`` (a key predicate), best first.

        Never raises on hostile queries (empty, punctuation only, huge, any script): returns the best
        effort, or [] when no term is known.
        """
        acc, touched = self._matched(query, allowed)
        matched = acc[touched]

        def best_first(pool: int) -> list[int]:
            # A partial sort of the matched docs only: ties by doc number, as the page orders them.
            if pool < len(touched):
                part = np.argpartition(-matched, pool - 1)[:pool]
                # Every doc tied with the pool's last one too: which of equal scores a partition
                # keeps must not decide the page.
                part = np.flatnonzero(matched >= matched[part].min())
            else:
                part = np.arange(len(touched))
            return [int(d) for d in touched[part[np.lexsort((touched[part], -matched[part]))]]]

        return self._rank(best_first, lambda doc: float(acc[doc]), len(touched), limit, allowed)

    def _rank(
        self,
        best_first: Callable[[int], list[int]],
        value: Callable[[int], float],
        total: int,
        limit: int,
        allowed: Callable[[str], bool] | None,
    ) -> list[SearchHit]:
        """The page: ``best_first(pool)`` gives the pool's docs best first out of ``total`` scored."""
        if limit <= 0 or not total:
            return []
        limit = min(limit, total)
        keys = self._keys
        verdicts: dict[int, bool] = {}
        pool = max(_MIN_POOL, _POOL_FACTOR * limit)
        while True:
            # Only a pool of the best docs is ordered; it grows only when visibility filtering leaves
            # fewer than a page.
            pooled = best_first(pool)
            final: dict[int, float] = {}
            for doc in pooled:
                ok = verdicts.get(doc)
                if ok is None:
                    ok = verdicts[doc] = allowed is None or bool(allowed(keys[doc]))
                if ok:
                    final[doc] = value(doc)
            if len(final) >= limit or len(pooled) >= total:
                final = self._server_aware(final)
                ordered = sorted(final.items(), key=lambda item: (-item[1], item[0]))[:limit]
                return [SearchHit(keys[doc], score) for doc, score in ordered]
            pool *= _POOL_FACTOR

    def _server_aware(self, final: dict[int, float]) -> dict[int, float]:
        """Lift each pooled tool by a share of its server's best pooled score (off by default).

        Exact within the pool: a server's best visible tool scores at least as much as any of its
        pooled tools, so it is pooled too.
        """
        boost = self._config.server_boost
        if boost <= 0 or len(self._servers) < 2:
            return final
        server_of = self._doc_server
        best: dict[int, float] = {}
        for doc, score in final.items():
            srv = server_of[doc]
            if score > best.get(srv, 0.0):
                best[srv] = score
        return {doc: s + boost * best[server_of[doc]] for doc, s in final.items()}

    # ---- serialisation -----------------------------------------------------------------------

    def to_doc(self) -> dict[str, Any]:
        """A compact JSON-able form (base64 packed integer arrays); :meth:`from_doc` reads it back.

        A scoped index writes the whole catalog's index it derives from (a scope is never stored).
        """
        if self._scope is not None:
            return self._base_index.to_doc()
        gap_width = width_for(max(self._gaps, default=0))
        server_width = width_for(max(self._doc_server, default=0))
        return {
            "v": FORMAT_VERSION,
            "config": self._config.to_doc(),
            "servers": self._servers,
            "names": self._names,
            "doc_server": pack(self._doc_server, server_width),
            "doc_server_w": server_width,
            # Terms never contain whitespace (analysis splits on it), so one joined string is exact.
            "terms": " ".join(self._terms),
            "offsets": pack(self._offsets, "I"),
            "gaps": pack(self._gaps, gap_width),
            "gaps_w": gap_width,
            "sats": pack(self._saturations, "B"),
            **(self._fields.to_doc() if self._fields is not None else {}),
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> SearchIndex:
        """Load an index written by :meth:`to_doc`; raises IndexFormatError (a ValueError) if malformed."""
        if not isinstance(doc, Mapping):
            raise IndexFormatError("search index: expected a JSON object")
        if doc.get("v") not in _READABLE:
            raise IndexFormatError(f"search index: unsupported format version {doc.get('v')!r}")
        try:
            terms_text = doc["terms"]
            offsets: array[int] = unpack(doc["offsets"], "I")
            names = [str(n) for n in doc["names"]]
            fields = None
            if doc["v"] >= 2:
                fields = FieldCounts.from_doc(doc, offsets[-1] if offsets else 0, len(names))
            return cls(
                config=SearchConfig.from_doc(doc["config"]),
                servers=[str(s) for s in doc["servers"]],
                doc_server=unpack(doc["doc_server"], doc["doc_server_w"]),
                names=names,
                terms=terms_text.split(" ") if terms_text else [],
                offsets=offsets,
                gaps=unpack(doc["gaps"], doc["gaps_w"]),
                saturations=unpack(doc["sats"], "B"),
                fields=fields,
            )
        except IndexFormatError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise IndexFormatError(f"search index: {exc!r}") from exc
