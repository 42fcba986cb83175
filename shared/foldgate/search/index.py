"""The search index on the request path: load a serialised index cheaply, rank tools for a query.

Querying is two steps so that a second signal can join later without changing either:
:meth:`SearchIndex.scores` gives every matching tool (by doc number) its lexical score, and
:meth:`SearchIndex.rank` turns any such score map — this one, or a fusion of it with a dense one —
into a visibility-filtered page of hits. :meth:`SearchIndex.search` is the two together, without
materialising the score map.
"""

from __future__ import annotations

import heapq
import math
from array import array
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from typing import Any

from foldgate.search.analysis import analyze
from foldgate.search.codec import IndexFormatError, pack, unpack, width_for
from foldgate.search.config import SearchConfig
from foldgate.search.names import NameMatcher, name_form

__all__ = ["FORMAT_VERSION", "SATURATION_LEVELS", "SearchHit", "SearchIndex"]

FORMAT_VERSION = 1
# Stored term saturations are integers 0..255 standing for 0..k1+1.
SATURATION_LEVELS = 255
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
    ) -> None:
        """Assemble an index from its arrays (``build_search_index`` and :meth:`from_doc` call this)."""
        if (
            len(doc_server) != len(names)
            or len(offsets) != len(terms) + 1
            or len(gaps) != len(saturations)
            or (offsets and offsets[-1] != len(gaps))
            or (doc_server and max(doc_server) >= len(servers))
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
        self._term_ids = dict(zip(self._terms, range(len(self._terms)), strict=True))
        self._keys = [f"{self._servers[s]}:{n}" for s, n in zip(doc_server, self._names, strict=True)]

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

    # ---- query -------------------------------------------------------------------------------

    def _query_terms(self, query: str) -> list[int]:
        """Known distinct terms of the query, rarest first, within the postings budget."""
        ids: set[int] = set()
        for term in analyze(query[:_MAX_QUERY_CHARS], stemming=self._config.stemming):
            tid = self._term_ids.get(term)
            if tid is not None:
                ids.add(tid)
                if len(ids) >= _MAX_QUERY_TERMS:
                    break
        offsets = self._offsets
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
        n = len(self._keys)
        if not isinstance(query, str) or not n:
            return []
        offsets = self._offsets
        unit = (self._config.k1 + 1) / SATURATION_LEVELS
        out: list[tuple[int, int, float]] = []
        for tid in self._query_terms(query):
            lo, hi = offsets[tid], offsets[tid + 1]
            out.append((lo, hi, math.log(1 + (n - (hi - lo) + 0.5) / (hi - lo + 0.5)) * unit))
        return out

    @property
    def postings(self) -> tuple[Sequence[int], Sequence[int], Sequence[int]]:
        """``(offsets, gaps, saturations)``: term ``t``'s postings are ``[offsets[t], offsets[t+1])``,
        doc numbers as gaps from the previous posting of the same term (the first from 0)."""
        return self._offsets, self._gaps, self._saturations

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
        matcher = self._matcher
        return [
            (boost, docs(form))
            for boost, docs in ((cfg.exact_name_boost, matcher.exact), (cfg.prefix_boost, matcher.prefix))
            if boost > 0
        ]

    def _matched(
        self, query: str, allowed: Callable[[str], bool] | None = None
    ) -> tuple[list[float], set[int]]:
        """BM25F score per doc (a list indexed by doc) and the set of docs that matched anything."""
        n = len(self._keys)
        acc = [0.0] * n
        touched: set[int] = set()
        if not isinstance(query, str) or not n:
            return acc, touched
        offsets, gaps, sats = self._offsets, self._gaps, self._saturations
        unit = (self._config.k1 + 1) / SATURATION_LEVELS
        # Term at a time: one C-level decode of the doc gaps, then a tight loop; the cost of a query
        # is proportional to the postings of its terms.
        for tid in self._query_terms(query):
            lo, hi = offsets[tid], offsets[tid + 1]
            weight = math.log(1 + (n - (hi - lo) + 0.5) / (hi - lo + 0.5)) * unit
            docs = list(accumulate(gaps[lo:hi]))
            touched.update(docs)
            for doc, sat in zip(docs, sats[lo:hi], strict=True):
                acc[doc] += sat * weight
        self._name_boosts(query, acc, touched, allowed)
        return acc, touched

    def _name_boosts(
        self, query: str, acc: list[float], touched: set[int], allowed: Callable[[str], bool] | None
    ) -> None:
        cfg = self._config
        if cfg.exact_name_boost <= 0 and cfg.prefix_boost <= 0:
            return
        form = name_form(query[:_MAX_NAME_CHARS])
        # Sentences are not names: skip them without building the name tables.
        if not form or form.count(" ") >= _MAX_NAME_WORDS:
            return
        # Sized on the tools the caller may see: a hidden tool must not move a visible tool's score.
        keys = self._keys
        seen = touched if allowed is None else (d for d in touched if allowed(keys[d]))
        best = max(map(acc.__getitem__, seen), default=0.0) or 1.0
        matcher = self._matcher
        for boost, docs in ((cfg.exact_name_boost, matcher.exact), (cfg.prefix_boost, matcher.prefix)):
            if boost > 0:
                for doc in docs(form):
                    acc[doc] += boost * best
                    touched.add(doc)

    def scores(self, query: str, *, allowed: Callable[[str], bool] | None = None) -> dict[int, float]:
        """Every matching doc's lexical score for ``query`` (name boosts included); {} if none matches.

        Doc numbers index :attr:`keys`. This is the lexical signal that a later fusion can combine
        with others before :meth:`rank`; ``rank(scores(q))`` equals ``search(q)``.
        """
        acc, touched = self._matched(query, allowed)
        return {doc: acc[doc] for doc in touched}

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
        return self._rank(scores.__getitem__, scores.keys(), limit, allowed)

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        """The ``limit`` best tools for ``query`` among those ``allowed`` (a key predicate), best first.

        Never raises on hostile queries (empty, punctuation only, huge, any script): returns the best
        effort, or [] when no term is known.
        """
        acc, touched = self._matched(query, allowed)
        return self._rank(acc.__getitem__, touched, limit, allowed)

    def _rank(
        self,
        value: Callable[[int], float],
        docs: Collection[int],
        limit: int,
        allowed: Callable[[str], bool] | None,
    ) -> list[SearchHit]:
        if limit <= 0 or not docs:
            return []
        limit = min(limit, len(docs))
        keys = self._keys
        verdicts: dict[int, bool] = {}
        pool = max(_MIN_POOL, _POOL_FACTOR * limit)
        while True:
            # Only a pool of the best docs is ordered; it grows only when visibility filtering leaves
            # fewer than a page.
            pooled = heapq.nlargest(pool, docs, key=value)
            final: dict[int, float] = {}
            for doc in pooled:
                ok = verdicts.get(doc)
                if ok is None:
                    ok = verdicts[doc] = allowed is None or bool(allowed(keys[doc]))
                if ok:
                    final[doc] = value(doc)
            if len(final) >= limit or len(pooled) >= len(docs):
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
        """A compact JSON-able form (base64 packed integer arrays); :meth:`from_doc` reads it back."""
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
        }

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any]) -> SearchIndex:
        """Load an index written by :meth:`to_doc`; raises IndexFormatError (a ValueError) if malformed."""
        if not isinstance(doc, Mapping):
            raise IndexFormatError("search index: expected a JSON object")
        if doc.get("v") != FORMAT_VERSION:
            raise IndexFormatError(f"search index: unsupported format version {doc.get('v')!r}")
        try:
            terms_text = doc["terms"]
            offsets: array[int] = unpack(doc["offsets"], "I")
            return cls(
                config=SearchConfig.from_doc(doc["config"]),
                servers=[str(s) for s in doc["servers"]],
                doc_server=unpack(doc["doc_server"], doc["doc_server_w"]),
                names=[str(n) for n in doc["names"]],
                terms=terms_text.split(" ") if terms_text else [],
                offsets=offsets,
                gaps=unpack(doc["gaps"], doc["gaps_w"]),
                saturations=unpack(doc["sats"], "B"),
            )
        except IndexFormatError:
            raise
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise IndexFormatError(f"search index: {exc!r}") from exc
