"""Oversized tool results for ``read_cache``: interface, SQLite and DynamoDB backends."""
