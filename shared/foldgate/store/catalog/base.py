"""The store interface: immutable catalog versions plus one atomically flipped pointer per tenant."""

from __future__ import annotations

import json
import zlib
from abc import ABC, abstractmethod

from foldgate.errors import StoreError
from foldgate.model.catalog import CatalogVersion
from foldgate.model.jsonutil import compact

__all__ = ["CatalogStore", "decode_catalog", "encode_catalog"]


def encode_catalog(catalog: CatalogVersion) -> bytes:
    """Compressed compact JSON of a catalog version (schemas compress ~5-10x)."""
    return zlib.compress(compact(catalog.to_doc()).encode("utf-8"), 6)


def decode_catalog(blob: bytes) -> CatalogVersion:
    """Inverse of :func:`encode_catalog`; a corrupt blob is a StoreError, never a crash."""
    try:
        return CatalogVersion.from_doc(json.loads(zlib.decompress(blob)))
    except (zlib.error, ValueError, KeyError, TypeError) as exc:
        raise StoreError(f"stored catalog is unreadable: {exc}") from exc


class CatalogStore(ABC):
    """Where catalog versions live. Readers only ever see complete versions.

    ``publish`` writes a whole version first, then makes it current with one compare-and-set on the
    tenant's pointer: a concurrent indexer that lost the race gets ConflictError and its version is
    never seen.
    """

    @abstractmethod
    def current_version(self, tenant: str) -> str | None:
        """The id of the tenant's current version (cheap: one small read)."""

    @abstractmethod
    def load_version(self, tenant: str, version: str) -> CatalogVersion | None:
        """A stored version, None if absent or expired."""

    @abstractmethod
    def has_version(self, tenant: str, version: str) -> bool:
        """Whether a stored version looks loadable, without reading it whole (cheap: one small read).

        False for a version that is absent, expired or was never finished writing; True does not
        promise every byte is intact (only :meth:`load_version` checks that).
        """

    @abstractmethod
    def publish(self, catalog: CatalogVersion, *, expected_current: str | None) -> None:
        """Store ``catalog`` and make it current if the pointer still equals ``expected_current``."""

    @abstractmethod
    def tenants(self) -> list[str]:
        """Tenants that have a current version."""

    def load_current(self, tenant: str) -> CatalogVersion | None:
        """The tenant's current version, None before the first index."""
        version = self.current_version(tenant)
        return None if version is None else self.load_version(tenant, version)

    def close(self) -> None:  # noqa: B027 - optional hook, most stores hold nothing to close
        """Release resources."""
