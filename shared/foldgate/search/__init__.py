"""Lexical tool search: an index built once per catalog version, loaded and queried on the request path.

The indexer calls :func:`build_search_index` and stores :meth:`SearchIndex.to_doc` inside the catalog
version; the request path keeps :meth:`SearchIndex.from_doc` per version and calls
:meth:`SearchIndex.search`. The dense half (``embed``, ``dense``, ``hybrid``) adds index-time vectors and
a local query encoder; no model beyond that encoder is ever called on the request path.
"""

from __future__ import annotations

from foldgate.search.build import build_search_index
from foldgate.search.codec import IndexFormatError
from foldgate.search.config import DEFAULT, PLAIN, SearchConfig
from foldgate.search.index import SearchHit, SearchIndex

__all__ = [
    "DEFAULT",
    "PLAIN",
    "IndexFormatError",
    "SearchConfig",
    "SearchHit",
    "SearchIndex",
    "build_search_index",
]
