"""Search over one catalog version, loaded once per version: hybrid when the catalog carries vectors
and an embedding provider is available, else lexical."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from foldgate.model.catalog import CatalogVersion

if TYPE_CHECKING:
    from foldgate.search import SearchHit
    from foldgate.search.embed import Embedder

__all__ = ["Searcher", "SearcherCache"]

log = logging.getLogger(__name__)


class Searcher(Protocol):
    """Lexical or hybrid search over one catalog version."""

    def search(
        self, query: str, *, limit: int = 10, allowed: Callable[[str], bool] | None = None
    ) -> list[SearchHit]:
        """The best ``limit`` allowed tools for the query."""
        ...


class SearcherCache:
    """One searcher per tenant, for its newest catalog version."""

    def __init__(self, embedder: Callable[[], Embedder] | None = None, *, hybrid_weight: float = 0.6) -> None:
        self.embedder = embedder
        self.hybrid_weight = hybrid_weight
        self._search: dict[str, tuple[str, Searcher]] = {}

    def get(self, catalog: CatalogVersion) -> Searcher:
        """The catalog's search (built here from the tools only for catalogs stored without an index)."""
        cached = self._search.get(catalog.tenant)
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
        searcher = MultiIntentSearcher(searcher)
        self._search[catalog.tenant] = (catalog.version, searcher)
        return searcher
