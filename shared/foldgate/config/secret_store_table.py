"""``foldgate tenant apply``'s secret store for ``SecretStore: table`` (docs/operate.md): the Parameter
Store names, sealed in the table by :class:`foldgate.store.secrets_table.SealedSecrets`. It lives with
the other secret stores in ``config`` (the store package knows nothing of tenant paths)."""

from __future__ import annotations

from foldgate.config.cloud import tenant_path
from foldgate.config.secret_store import SecretStore
from foldgate.store.secrets_table import SealedSecrets

__all__ = ["TableSecretStore"]


class TableSecretStore(SecretStore):
    """``foldgate tenant apply``'s secret store for ``SecretStore: table``: the Parameter Store names,
    sealed in the table."""

    def __init__(self, secrets: SealedSecrets, prefix: str) -> None:
        self.secrets = secrets
        self.prefix = prefix.rstrip("/")

    def full_name(self, tenant: str, name: str) -> str:
        """The secret's full name (as its parameter would be called)."""
        return f"{tenant_path(self.prefix, tenant)}/secrets/{name}"

    def where(self, tenant: str, name: str) -> str:
        """The full name, and that it is sealed in the table."""
        return f"{self.full_name(tenant, name)} sealed in table {self.secrets.table_name}"

    def current(self, tenant: str, name: str) -> str | None:
        """The opened value (kept in memory only to compare), None when absent."""
        return self.secrets.get(self.full_name(tenant, name))

    def put(self, tenant: str, name: str, value: str) -> None:
        """Sealed under the stack's key."""
        self.secrets.put(self.full_name(tenant, name), value)
