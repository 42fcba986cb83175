"""Catalog versions: interface and codec (``base``), SQLite and DynamoDB backends."""
