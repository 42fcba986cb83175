"""Multi-intent retrieval: one search per need named in a request, merged so a page covers every need.

:class:`MultiIntentSearcher` wraps any searcher (the lexical :class:`~foldgate.search.SearchIndex` or the
:class:`~foldgate.search.hybrid.HybridSearcher`). A request with one need (the common case) is passed
straight through: same hits, same cost plus one regex scan. A request that
:func:`~foldgate.search.intents.split_intents` cuts into several needs is searched once per need and the
ranked lists are merged by reciprocal rank fusion (RRF): a tool's merged value is the sum over lists of
``weight / (k + rank)``. With a small ``k`` the first hits of every need come before the second hits of
any need, which is what "a page of k covers each intent" asks; the whole request is searched too, at a
lower weight and lexically only, so a tool that matches the request as a whole (or a need the splitter
cut badly) still ranks. The parameters were measured on the tuning sets (see :data:`DEFAULT_K`).

Visibility is the inner searcher's: ``allowed`` goes to every inner search, so nothing invisible is
ever scored into a page, and the merged value depends only on ranks among visible tools.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Protocol

from foldgate.search.index import SearchHit
from foldgate.search.intents import split_intents

__all__ = [
    "DEFAULT_K",
    "DEFAULT_WHOLE_DENSE",
    "DEFAULT_WHOLE_WEIGHT",
    "INTENT_TOOLS",
    "IntentHits",
    "MultiIntentSearcher",
    "Searcher",
    "intent_ranks",
    "search_with_intents",
]

# RRF constant and the whole request's weight, chosen on the generated multi-intent tuning set
# (tests/data/tuning, 250 requests of 2-3 MCPToolBench++ needs over its 87 tools) and checked on the
# single-need sets. Hybrid, R@5 / all-needs-in-top-5 on multi-intent: unsplit 0.769 / 0.492; k 0.25 →
# 0.920 / 0.804, 0.5 → 0.919 / 0.800, 1 → 0.913 / 0.788, 2 → 0.892 / 0.744 (whole weight 0.5; at 1.0
# each is 0.01-0.04 lower). Golden R@5 0.911 unchanged (nDCG@10 0.855 → 0.861), MCPToolBench++ R@5
# 0.974 → 0.973. Lexical: multi-intent 0.842 → 0.905, golden 0.809 → 0.798 (one two-verb query).
DEFAULT_K = 0.5
DEFAULT_WHOLE_WEIGHT = 0.5
# The whole request is searched lexically only: its embedding was the longest encode of a request
# (~40% of a multi-need request's time) and measured worse than BM25 alone for this role. Hybrid, as
# served, whole request embedded → lexical (limit 40): multi-intent R@5 0.923 → 0.934, all needs in
# top 20 0.988 → 0.992; the 11k cross-catalog multi-need set R@5 0.269 → 0.291, all in top 30 / 40
# 0.300 / 0.356 → 0.324 / 0.408 (top 5 0.068 → 0.048: five tasks); golden unchanged (0.911, nDCG@10
# 0.861), MCPToolBench++ 0.973 → 0.974. Dropping the whole request instead lost on the 11k set (R@5 0.255).
DEFAULT_WHOLE_DENSE = False
# A need names at most this many page positions (its own best tools) in a retrieve_tools answer.
INTENT_TOOLS = 5
# Each need's list is searched this deep (at least the page size): deep enough for the fusion, small
# enough that a 4-need request costs 4 cheap searches.
_MIN_DEPTH = 10


class Searcher(Protocol):
    """Anything that ranks tools for a query (lexical index, hybrid searcher, this class)."""

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        """The best ``limit`` allowed tools for ``query``."""
        ...


@dataclass(frozen=True, slots=True)
class IntentHits:
    """One need of a request and the hits that search for it alone returned, best first."""

    intent: str
    hits: list[SearchHit]


class MultiIntentSearcher:
    """A searcher that splits multi-need requests, searches each need and fuses the ranked lists."""

    def __init__(
        self,
        inner: Searcher,
        *,
        k: float = DEFAULT_K,
        whole_weight: float = DEFAULT_WHOLE_WEIGHT,
        whole_dense: bool = DEFAULT_WHOLE_DENSE,
    ) -> None:
        """Wrap ``inner``; ``k`` is the RRF constant, ``whole_weight`` the whole request's share and
        ``whole_dense`` whether the whole request is embedded too (else it is searched lexically)."""
        self.inner = inner
        self.whole_dense = whole_dense
        self.k = max(0.0, float(k))
        self.whole_weight = max(0.0, float(whole_weight))

    def scoped(self, keys: Collection[str]) -> MultiIntentSearcher:
        """This searcher for a caller who sees only the tools ``keys`` (the inner searcher's scope)."""
        scoped = getattr(self.inner, "scoped", None)
        inner = scoped(keys) if callable(scoped) else self.inner
        if inner is self.inner:
            return self
        return MultiIntentSearcher(
            inner, k=self.k, whole_weight=self.whole_weight, whole_dense=self.whole_dense
        )

    def __getattr__(self, name: str) -> object:
        # Facts of the wrapped searcher (mode, reason, fallbacks, keys) stay readable through the wrapper.
        return getattr(self.inner, name)

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        """The ``limit`` best tools over every need of ``query``, best first (scores in (0, 1])."""
        return self.search_intents(query, limit=limit, allowed=allowed)[0]

    def search_intents(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> tuple[list[SearchHit], list[IntentHits]]:
        """The merged page and, when the request names several needs, each need's own hits.

        The second element is empty for a single-need request (its page is the inner searcher's).
        """
        if limit <= 0:
            return [], []
        intents = split_intents(query)
        if len(intents) <= 1:
            return self.inner.search(query, limit=limit, allowed=allowed), []
        depth = max(limit, _MIN_DEPTH)
        texts = [*intents, query] if self.whole_weight > 0 else list(intents)
        many = getattr(self.inner, "search_many", None)
        if callable(many):
            # One request, several queries: the hybrid searcher reads its vector matrix once for all.
            lexical = () if self.whole_dense else (len(intents),)
            pages: list[list[SearchHit]] = many(texts, limit=depth, allowed=allowed, lexical_only=lexical)
        else:
            pages = [self.inner.search(text, limit=depth, allowed=allowed) for text in texts]
        groups = [IntentHits(i, hits) for i, hits in zip(intents, pages, strict=False)]
        lists: list[tuple[float, list[SearchHit]]] = [(1.0, g.hits) for g in groups]
        if self.whole_weight > 0:
            lists.append((self.whole_weight, pages[-1]))
        return self._fuse(lists, limit), groups

    def _fuse(self, lists: list[tuple[float, list[SearchHit]]], limit: int) -> list[SearchHit]:
        fused: dict[str, float] = {}
        first_seen: dict[str, int] = {}
        for weight, hits in lists:
            for rank, hit in enumerate(hits):
                fused[hit.key] = fused.get(hit.key, 0.0) + weight / (self.k + rank + 1)
                first_seen.setdefault(hit.key, len(first_seen))
        if not fused:
            return []
        ordered = sorted(fused, key=lambda key: (-fused[key], first_seen[key]))[:limit]
        best = fused[ordered[0]]
        return [SearchHit(key, round(fused[key] / best, 6)) for key in ordered]


def search_with_intents(
    searcher: Searcher, query: str, *, limit: int, allowed: Callable[[str], bool] | None = None
) -> tuple[list[SearchHit], list[IntentHits]]:
    """:meth:`MultiIntentSearcher.search_intents` for any searcher (a plain one has no needs to show)."""
    if isinstance(searcher, MultiIntentSearcher):
        return searcher.search_intents(query, limit=limit, allowed=allowed)
    return searcher.search(query, limit=limit, allowed=allowed), []


def intent_ranks(
    page: list[SearchHit], groups: list[IntentHits], per_need: int = INTENT_TOOLS
) -> list[tuple[str, list[int]]]:
    """Each need with the 1-based positions in ``page`` of its own best tools (at most ``per_need``).

    This is what lets an agent see which returned tool serves which part of its request. Only a
    need's own first ``per_need`` hits are named: on a page of 60-100 tools every need's deeper hits
    would list most of the page again (~130 tokens a request) and tell the agent nothing more. A page
    tool that only the whole request found is in no group. A need with no page tool is kept with an
    empty list: it tells the agent to search that need again with other words.
    """
    order = {hit.key: i for i, hit in enumerate(page, 1)}
    out: list[tuple[str, list[int]]] = []
    for group in groups:
        found = [order[h.key] for h in group.hits if h.key in order]
        out.append((group.intent, sorted(set(found[:per_need]))))
    return out
