"""Index-time enrichment: a language model writes a "when to use" hint and user-style queries per tool.

Paid once per tool version by the indexer (cached by the tool's content hash), never on the request
path. :mod:`foldgate.enrich.base` holds the types and the provider interface shared by the providers
(``foldgate.enrich.providers``) and the indexer's pass (``foldgate.enrich.pipeline``); what is stored
per tool (``Enrichment``) is data the catalog and search read, so it lives in ``foldgate.model``.
"""
