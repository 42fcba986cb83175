"""Tenant config documents and the tenant registry: the interface.

A tenant's whole config is one JSON document (servers inline), written by the operator's CLI
(``foldgate tenant apply``) and read by the ``table`` config source (:mod:`foldgate.config.table`).
Every write also records the tenant in a registry that lists all tenants in a few reads, however
many there are: Parameter Store cannot hold 10,000 tenants of ~20 servers (one parameter per server is
210,000 parameters, past even the advanced tier's 100,000) nor list them cheaply (DescribeParameters
returns at most 50 names a call); the figures are in docs/scale.md. Upstream secrets stay in Parameter
Store (SecureString), under the same ``{prefix}/tenants/{tenant}/secrets/`` path as before.

Documents are hostile input like any tenant config: the store keeps them as given (validation is the
config source's), bounded in size so one can never exceed a DynamoDB item.
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Final

from foldgate.errors import InvalidRequestError, StoreError
from foldgate.model.jsonutil import canonical, sha256_hex

__all__ = [
    "MAX_DOC_BYTES",
    "STALE",
    "StoredConfig",
    "TenantConfigStore",
    "check_tenant",
    "decoded",
    "encoded",
    "revision_of",
]

# A document's canonical JSON at most this long: well inside DynamoDB's 400 KB item with its keys. A
# tenant of 20 servers is a few KB; a document this size would be hundreds of servers.
MAX_DOC_BYTES: Final = 256_000
# Tenant ids as agent tokens and webhook paths spell them; also a valid Parameter Store path segment.
_TENANT: Final = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")


def check_tenant(tenant: str) -> str:
    """The tenant id, or InvalidRequestError when it is not one (letters, digits, ``_.-``, ≤ 128)."""
    if not isinstance(tenant, str) or not _TENANT.match(tenant):
        raise InvalidRequestError(
            f"invalid tenant id {tenant!r}: letters, digits, '_', '.', '-' (at most 128)"
        )
    return tenant


# What a conditional write refused says (the console shows it with the fresh state).
STALE: Final = "the config changed since it was read; reload and try again"


def revision_of(doc: dict[str, Any]) -> str:
    """The document's revision: a hash of its canonical JSON (equal documents, equal revisions)."""
    return sha256_hex(canonical(doc))[:32]


def encoded(doc: dict[str, Any]) -> str:
    """The document as stored (canonical JSON); InvalidRequestError past :data:`MAX_DOC_BYTES`."""
    if not isinstance(doc, dict):
        raise InvalidRequestError("a tenant config document must be a JSON object")
    text = canonical(doc)
    if len(text.encode("utf-8")) > MAX_DOC_BYTES:
        raise InvalidRequestError(f"tenant config document larger than {MAX_DOC_BYTES} bytes")
    return text


def decoded(text: str, tenant: str) -> dict[str, Any]:
    """A stored document parsed; StoreError unless it is a JSON object (an item edited by hand)."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise StoreError(f"stored config of {tenant!r} is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise StoreError(f"stored config of {tenant!r} is not a JSON object")
    return doc


@dataclass(frozen=True)
class StoredConfig:
    """One tenant's config document as stored."""

    tenant: str
    doc: dict[str, Any]
    revision: str
    updated_at: float


class TenantConfigStore(ABC):
    """Tenant config documents by tenant id, and the registry of every tenant that has one."""

    @abstractmethod
    def put(
        self, tenant: str, doc: dict[str, Any], *, expected_revision: str | None = None
    ) -> tuple[StoredConfig, bool]:
        """Store the tenant's document and list the tenant in the registry, both or neither; returns
        the stored config and whether anything was written (an unchanged document writes nothing).

        ``expected_revision`` makes the write conditional (the console's edits): ConflictError unless
        the stored document still has that revision when it is replaced, so of two editors who read
        the same revision only the first one's write lands.
        """

    @abstractmethod
    def get(self, tenant: str, *, consistent: bool = False) -> StoredConfig | None:
        """The tenant's document, None when the tenant has none; ``consistent`` reads the last write
        (a change trigger), otherwise a read may lag a write by a second (the sources cache longer)."""

    @abstractmethod
    def delete(self, tenant: str) -> bool:
        """Remove the tenant's document and its registry entry; whether it had one."""

    @abstractmethod
    def tenants(self) -> list[str]:
        """Every tenant in the registry, sorted (a few reads for any number of tenants)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
