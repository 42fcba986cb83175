"""Indexing: list every upstream, compile and pre-render, publish a catalog version (``indexer``);
the Lambda job around it (``job``) and the ways a reindex is asked for (``triggers``)."""
