"""Search over one catalog version, loaded once per version: hybrid when the catalog carries vectors
and an embedding provider is available, else lexical.

A caller who sees only part of the catalog (a scoped token, disabled tools) searches a scope of it
(:meth:`SearcherCache.for_view`): its ranking statistics come from the tools it sees, so words in
tools it cannot see never move the order of those it can. Scopes are shared by every view with the
same visible tools.

Searchers and scopes are kept on the instance's memory budget (:mod:`foldgate.model.lru`) in the
tenant's group: evicted least recently used first, and with the tenant's catalog.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from foldgate.model.catalog import CatalogVersion
from foldgate.model.lru import MemoryBudget, collect_young
from foldgate.serve.views import TenantView

if TYPE_CHECKING:
    from foldgate.search import SearchHit
    from foldgate.search.embed import Embedder
    from foldgate.search.multi import MultiIntentSearcher

__all__ = ["Searcher", "SearcherCache", "scope_bytes", "searcher_bytes"]

log = logging.getLogger(__name__)

_MEMO = "searcher"
# Measured with tracemalloc over corpus catalogs of 50-500 tools: a loaded lexical index holds ~7-9
# bytes per character of its stored document's strings (terms, packed postings) plus a per-tool part.
_BYTES_PER_INDEX_CHAR = 8
_BYTES_PER_TOOL = 600
# A scope of an 11k-tool catalog holds ~3 MB of postings: ~300 bytes per visible tool.
_BYTES_PER_SCOPED_TOOL = 300


def searcher_bytes(catalog: CatalogVersion) -> int:
    """The estimated memory of the catalog's searcher: the lexical index from its stored document's
    length and tool count, the dense matrix (int8 codes and a float32 copy) from its shape."""
    n = len(catalog.tools)
    size = _BYTES_PER_TOOL * n + 16384
    if catalog.search is not None:
        size += _BYTES_PER_INDEX_CHAR * sum(len(v) for v in catalog.search.values() if isinstance(v, str))
    else:
        # Built here from the tools: about what a stored one of this catalog holds.
        size += _BYTES_PER_INDEX_CHAR * 200 * n
    dense = catalog.dense
    if dense is not None:
        dim = dense.get("dim")
        keys = dense.get("keys")
        if isinstance(dim, int) and isinstance(keys, list):
            size += len(keys) * (dim * 5 + 200)
    return size


def scope_bytes(keys: int) -> int:
    """The estimated memory of a scope over ``keys`` visible tools."""
    return _BYTES_PER_SCOPED_TOOL * keys + 4096


class Searcher(Protocol):
    """Lexical or hybrid search over one catalog version."""

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        """The best ``limit`` allowed tools for the query."""
        ...


class SearcherCache:
    """One searcher per tenant, for its newest catalog version."""

    def __init__(
        self,
        embedder: Callable[[], Embedder] | None = None,
        *,
        hybrid_weight: float = 0.6,
        memory: MemoryBudget | None = None,
    ) -> None:
        self.embedder = embedder
        self.hybrid_weight = hybrid_weight
        self.memory = memory if memory is not None else MemoryBudget()
        # By tenant: (catalog version, its searcher).
        self._search = self.memory.shelf("searcher")
        # By (tenant, catalog version, visible-set digest): the scope's searcher.
        self._scopes = self.memory.shelf("scope")

    def for_view(self, view: TenantView) -> Searcher:
        """The search of the view's caller: ranked over the tools the view makes visible, only.

        A view that sees the whole catalog gets :meth:`get`'s searcher itself.
        """
        base = self.get(view.catalog)
        memo = view.memo.get(_MEMO)
        if memo is not None and memo[0] is base:
            searcher: Searcher = memo[1]
            return searcher
        keys = [t.tool.key for t in view.visible]
        if len(keys) == len(view.catalog.tools):
            searcher = base
        else:
            searcher = self._scope(view.catalog, base, keys)
        view.memo[_MEMO] = (base, searcher)
        return searcher

    def _scope(self, catalog: CatalogVersion, base: MultiIntentSearcher, keys: list[str]) -> Searcher:
        digest = hashlib.blake2b("\n".join(keys).encode("utf-8", "surrogatepass"), digest_size=16).digest()
        key = (catalog.tenant, catalog.version, digest)
        found: Searcher | None = self._scopes.get(key)
        if found is None:
            found = base.scoped(keys)
            # An older version's scopes are never asked for again: they age out of the budget.
            self._scopes.put(key, found, scope_bytes(len(keys)), group=catalog.tenant)
        return found

    def get(self, catalog: CatalogVersion) -> MultiIntentSearcher:
        """The catalog's search (built here from the tools only for catalogs stored without an index)."""
        cached: tuple[str, MultiIntentSearcher] | None = self._search.get(catalog.tenant)
        if cached is not None and cached[0] == catalog.version:
            return cached[1]
        # The search package (and numpy, for the dense half) loads on the first search, not at init.
        from foldgate.search import IndexFormatError, SearchIndex, build_search_index
        from foldgate.search.multi import MultiIntentSearcher

        lexical = None
        if catalog.search is not None:
            try:
                lexical = SearchIndex.from_doc(catalog.search)
            except IndexFormatError as exc:
                log.error("tenant %s: stored search index unreadable: %s", catalog.tenant, exc)
            if lexical is not None and not lexical.scopeable:
                # Stored before scopes (format 1): rebuilt once here, until the next index run.
                log.info("tenant %s: stored search index predates scopes; rebuilding it", catalog.tenant)
                lexical = None
        if lexical is None:
            lexical = build_search_index([t.tool for t in catalog.tools])
        searcher: Searcher = lexical
        if catalog.dense is not None and self.embedder is not None:
            # numpy and the encoder load on the first search that needs them, not at init.
            from foldgate.search.dense import DenseIndex
            from foldgate.search.hybrid import HybridSearcher

            try:
                dense = DenseIndex.from_doc(catalog.dense)
                searcher = HybridSearcher(lexical, dense, self.embedder(), weight=self.hybrid_weight)
            except IndexFormatError as exc:
                log.error("tenant %s: stored dense index unreadable: %s", catalog.tenant, exc)
        # Multi-need requests are searched need by need (foldgate.search.multi); one need: unchanged.
        multi = MultiIntentSearcher(searcher)
        self._search.put(
            catalog.tenant, (catalog.version, multi), searcher_bytes(catalog), group=catalog.tenant
        )
        collect_young()  # the build's objects, collected on this (cold) request
        return multi
