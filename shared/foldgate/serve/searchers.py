"""Search over one catalog version, loaded once per version: hybrid when the catalog carries vectors
and an embedding provider is available, else lexical.

A caller who sees only part of the catalog (a scoped token, disabled tools) searches a scope of it
(:meth:`SearcherCache.for_view`): its ranking statistics come from the tools it sees, so words in
tools it cannot see never move the order of those it can. Scopes are shared by every view with the
same visible tools and bounded per tenant.
"""

from __future__ import annotations

import hashlib
import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from foldgate.model.catalog import CatalogVersion
from foldgate.serve.views import TenantView

if TYPE_CHECKING:
    from foldgate.search import SearchHit
    from foldgate.search.embed import Embedder
    from foldgate.search.multi import MultiIntentSearcher

__all__ = ["Searcher", "SearcherCache"]

log = logging.getLogger(__name__)

# Distinct visible sets kept per tenant (a scope of an 11k-tool catalog holds ~3 MB of postings).
_MAX_SCOPES = 16
_MEMO = "searcher"


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
        self._search: dict[str, tuple[str, MultiIntentSearcher]] = {}
        # Per tenant: the catalog version and its scopes by visible-set digest, least recent first.
        self._scopes: dict[str, tuple[str, OrderedDict[bytes, Searcher]]] = {}

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
        version, scopes = self._scopes.get(catalog.tenant, ("", OrderedDict()))
        if version != catalog.version:
            scopes = OrderedDict()
            self._scopes[catalog.tenant] = (catalog.version, scopes)
        found = scopes.get(digest)
        if found is None:
            found = scopes[digest] = base.scoped(keys)
            while len(scopes) > _MAX_SCOPES:
                scopes.popitem(last=False)
        else:
            scopes.move_to_end(digest)
        return found

    def get(self, catalog: CatalogVersion) -> MultiIntentSearcher:
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
        self._search[catalog.tenant] = (catalog.version, multi)
        return multi
