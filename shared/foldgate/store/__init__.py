"""Catalog stores: one interface, an embedded SQLite implementation and a DynamoDB one."""

from foldgate.store.base import CatalogStore, decode_catalog, encode_catalog

__all__ = ["CatalogStore", "decode_catalog", "encode_catalog"]
