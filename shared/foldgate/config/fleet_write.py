"""Where the console's fleet edits are written: the local config file or the tenant config table.

Each writer reads a tenant's document with its version (the file's content hash, the table's
revision), validates a new document by the rules the gateway reads it with (the cloud's in the table:
own secrets only, no stdio, no loopback issuer) and writes it only if the version is still the one
the operator's page was rendered from: ConflictError otherwise, and nothing is written. A Parameter
Store source has no writer: its documents are split one parameter per server with no version that
covers them all, so the console refuses and names ``foldgate tenant apply``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from foldgate.config.fleet_edit import name_fields, set_settings
from foldgate.config.source import ConfigSource, FileConfigSource
from foldgate.config.tenant import TenantConfig, parse_tenant_config, read_config_document
from foldgate.errors import ConfigError, ConflictError, NotFoundError
from foldgate.store.configs.base import TenantConfigStore

__all__ = [
    "NOT_EDITABLE",
    "ConfigDocument",
    "ConfigWriter",
    "FileConfigWriter",
    "TableConfigWriter",
    "config_writer",
]

NOT_EDITABLE: Final = (
    "This gateway's tenant configs are not written from the console (Parameter Store, or configs fixed "
    "at start): change the tenant's document and run `foldgate tenant apply`, or use ConfigSource=table."
)


@dataclass(frozen=True)
class ConfigDocument:
    """A tenant's config document and the version a conditional write must name."""

    doc: dict[str, Any]
    version: str


class ConfigWriter(ABC):
    """Reads and conditionally writes tenants' config documents."""

    # Shown beside the save buttons: where a save goes, and whether it keeps the file's comments.
    label: str = ""
    keeps_comments: bool = True
    # The deployment's allow_private_upstreams: False refuses loopback and private URL literals at save.
    allow_private: bool = True

    @abstractmethod
    def read(self, tenant: str) -> ConfigDocument:
        """The tenant's document and version; NotFoundError when it has none."""

    @abstractmethod
    def validate(self, tenant: str, doc: Mapping[str, Any]) -> TenantConfig:
        """The config ``doc`` would be; ConfigError naming the field (``servers[name].url: ...``)."""

    @abstractmethod
    def write(self, tenant: str, doc: Mapping[str, Any], version: str) -> ConfigDocument:
        """Validate and store ``doc`` if the stored version is still ``version``; ConflictError when it
        is not, ConfigError when the document is invalid (nothing is written either way)."""

    def save_settings(self, tenant: str, changes: Mapping[str, Any], version: str) -> None:
        """Write top-level settings (the context budget's what-if) on top of version ``version``."""
        current = self.read(tenant)
        if current.version != version:
            raise ConflictError(f"the config of {tenant} changed since this page was shown; reload it")
        self.write(tenant, set_settings(current.doc, changes), version)


def _checked(parse: Any, doc: Mapping[str, Any]) -> TenantConfig:
    try:
        config: TenantConfig = parse()
    except ConfigError as exc:
        raise ConfigError(f"not saved: {name_fields(exc.message, doc)}") from exc
    return config


class FileConfigWriter(ConfigWriter):
    """The one tenant of a local config file (YAML or JSON); see :mod:`foldgate.config.file_edit`."""

    def __init__(self, path: str | Path, tenant: str) -> None:
        self.path = Path(path)
        self.tenant = tenant
        self.label = self.path.name
        # Server and tool edits re-dump a YAML file (settings alone are edited line by line).
        self.keeps_comments = self.path.suffix not in (".yaml", ".yml")

    def _own(self, tenant: str) -> None:
        if tenant != self.tenant:
            raise NotFoundError(f"unknown tenant {tenant!r}")

    def read(self, tenant: str) -> ConfigDocument:
        """The file's document and content hash (the hash of the very bytes parsed)."""
        # Loaded only when the console edits: the file module pulls nothing else in.
        from foldgate.config.file_edit import content_hash

        self._own(tenant)
        version = content_hash(self.path)
        doc = read_config_document(self.path)
        if not isinstance(doc, dict):
            raise ConfigError(f"{self.path.name}: the top level is not a mapping; edit it by hand")
        if content_hash(self.path) != version:
            raise ConflictError(f"{self.path.name} changed while it was read; reload the page")
        return ConfigDocument(doc, version)

    def validate(self, tenant: str, doc: Mapping[str, Any]) -> TenantConfig:
        """The local rules (stdio servers and loopback issuers allowed)."""
        self._own(tenant)
        return _checked(
            lambda: parse_tenant_config(dict(doc), source=self.path.name, allow_private=self.allow_private),
            doc,
        )

    def write(self, tenant: str, doc: Mapping[str, Any], version: str) -> ConfigDocument:
        """Validate, then replace the file atomically if its hash is still ``version``."""
        # Loaded only when the console edits: the file module pulls nothing else in.
        from foldgate.config.file_edit import content_hash, save_document

        self.validate(tenant, doc)
        save_document(self.path, doc, version)
        return ConfigDocument(dict(doc), content_hash(self.path))

    def save_settings(self, tenant: str, changes: Mapping[str, Any], version: str) -> None:
        """Only the settings' own lines change: the file's comments and layout stay."""
        # Loaded only when the console edits: the file module pulls nothing else in.
        from foldgate.config.file_edit import save_settings

        self._own(tenant)
        save_settings(self.path, changes, version)


class TableConfigWriter(ConfigWriter):
    """Tenants' documents in the table (``ConfigSource=table``), validated by the cloud's rules."""

    label = "the tenant config table"

    def __init__(self, store: TenantConfigStore, prefix: str) -> None:
        self.store = store
        self.prefix = prefix

    def read(self, tenant: str) -> ConfigDocument:
        """A consistent read: the version must be the last write's."""
        stored = self.store.get(tenant, consistent=True)
        if stored is None:
            raise NotFoundError(f"tenant {tenant!r} has no config document")
        return ConfigDocument(stored.doc, stored.revision)

    def validate(self, tenant: str, doc: Mapping[str, Any]) -> TenantConfig:
        """The cloud's rules, with secrets resolved under the tenant's own path."""
        # Loaded only when the console edits a cloud tenant.
        from foldgate.config.cloud import parse_cloud_config, tenant_path

        base = tenant_path(self.prefix, tenant)
        return _checked(lambda: parse_cloud_config(dict(doc), base, allow_private=self.allow_private), doc)

    def write(self, tenant: str, doc: Mapping[str, Any], version: str) -> ConfigDocument:
        """Validate, then one conditional write of the document and its registry entry."""
        self.validate(tenant, doc)
        stored, _ = self.store.put(tenant, dict(doc), expected_revision=version)
        return ConfigDocument(stored.doc, stored.revision)


def config_writer(configs: ConfigSource, *, allow_private: bool = True) -> ConfigWriter | None:
    """The writer for a gateway's config source; None for a source the console cannot write
    (Parameter Store: :data:`NOT_EDITABLE`; fixed configs of tests and ``--upstream``).
    ``allow_private`` is the deployment's ``allow_private_upstreams`` (checked at save)."""
    writer: ConfigWriter | None = None
    if isinstance(configs, FileConfigSource):
        writer = FileConfigWriter(configs.path, configs.tenant)
    else:
        # Loaded only where the source is the table: the file-only local process pulls nothing in.
        from foldgate.config.table import TableConfigSource

        if isinstance(configs, TableConfigSource):
            writer = TableConfigWriter(configs.store, configs.prefix)
    if writer is not None:
        writer.allow_private = allow_private
    return writer
