"""Where ``foldgate tenant diff|apply|export`` reads and writes a tenant's config document.

* :class:`TableTarget`: the table (the ``table`` config source, the cloud's default): one document per
  tenant with its registry entry (:mod:`foldgate.store.configs`);
* :class:`SsmTarget`: Parameter Store in the layout the ``ssm`` source reads (:mod:`foldgate.config.ssm`):
  ``{prefix}/tenants/<t>/config`` without the servers, one ``servers/<name>`` parameter per server
  (each within the free 4 KB standard tier); a removed server's parameter is deleted;
* :class:`FileTarget`: the local config file ``foldgate serve --config`` reads (one tenant).

Each gives a document in one normal form, so what it stores compares equal to what it was given: the
Parameter Store layout keeps servers in name order, so its documents list them that way.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Final

from foldgate.config.cloud import tenant_path
from foldgate.errors import ConfigError
from foldgate.model.jsonutil import canonical

__all__ = ["ConfigTarget", "FileTarget", "SsmTarget", "TableTarget", "dump_document"]

# Parameter Store's standard tier: values up to 4 KB (free); larger would need the advanced tier.
_STANDARD_BYTES: Final = 4096


def dump_document(doc: dict[str, Any], fmt: str) -> str:
    """The document as YAML (key order kept) or JSON (indent 2), ending in a newline."""
    if fmt == "json":
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    # Loaded per command: PyYAML only where YAML is written.
    import yaml

    return str(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100))


def _same_json(stored: str, wanted: str) -> bool:
    """Whether a stored parameter holds the wanted JSON (key order aside); a value that is not JSON
    (edited by hand) never does."""
    try:
        return canonical(json.loads(stored)) == canonical(json.loads(wanted))
    except ValueError:
        return False


class ConfigTarget(ABC):
    """A place tenant config documents live, with the rules its readers validate them by."""

    #: Whether the cloud's rules apply (no stdio, own secrets only, no loopback issuer).
    cloud: bool = True

    def __init__(self, prefix: str) -> None:
        if not prefix.startswith("/"):
            raise ConfigError(f"config prefix {prefix!r} must start with '/'")
        self.prefix = prefix.rstrip("/")

    def base(self, tenant: str) -> str:
        """The tenant's Parameter Store path (its secrets are resolved under ``{base}/secrets/``)."""
        return tenant_path(self.prefix, tenant)

    @abstractmethod
    def describe(self, tenant: str) -> str:
        """Where the tenant's document is, for people (``table foldgate``, a parameter path, a file)."""

    @abstractmethod
    def read(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's stored document in normal form, None when it has none."""

    @abstractmethod
    def write(self, tenant: str, doc: dict[str, Any]) -> bool:
        """Store the (validated) document; whether anything was written."""

    def normalized(self, doc: dict[str, Any]) -> dict[str, Any]:
        """The document as this target would give it back."""
        return doc

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""


class TableTarget(ConfigTarget):
    """Documents in the table (:class:`foldgate.store.configs.base.TenantConfigStore`)."""

    def __init__(self, store: Any, prefix: str, name: str) -> None:
        super().__init__(prefix)
        self.store = store
        self.name = name

    def describe(self, tenant: str) -> str:
        """The table and the tenant."""
        return f"{self.name}, tenant {tenant}"

    def read(self, tenant: str) -> dict[str, Any] | None:
        """The stored document (a strongly consistent read: the last write)."""
        stored = self.store.get(tenant, consistent=True)
        return None if stored is None else dict(stored.doc)

    def write(self, tenant: str, doc: dict[str, Any]) -> bool:
        """The document and the registry entry, both or neither; nothing when unchanged."""
        _, wrote = self.store.put(tenant, doc)
        return bool(wrote)

    def close(self) -> None:
        """Close the store."""
        self.store.close()


class SsmTarget(ConfigTarget):
    """Documents as Parameter Store parameters, one per server (the ``ssm`` config source's layout)."""

    def __init__(self, client: Any, prefix: str) -> None:
        super().__init__(prefix)
        self.client = client

    def describe(self, tenant: str) -> str:
        """The tenant's parameter path."""
        return f"Parameter Store {self.base(tenant)}"

    def normalized(self, doc: dict[str, Any]) -> dict[str, Any]:
        """Servers in name order (their parameters are read back that way), always present."""
        servers = sorted(doc.get("servers") or [], key=lambda s: str(s.get("name", "")))
        return {**doc, "servers": servers}

    def _parameters(self, tenant: str) -> dict[str, str]:
        """The tenant's ``config`` and ``servers/*`` values by full name (secrets are not read)."""
        base = self.base(tenant)
        found: dict[str, str] = {}
        with contextlib.suppress(self.client.exceptions.ParameterNotFound):
            found[f"{base}/config"] = self.client.get_parameter(Name=f"{base}/config")["Parameter"]["Value"]
        paginator = self.client.get_paginator("get_parameters_by_path")
        for page in paginator.paginate(Path=f"{base}/servers", Recursive=True):
            for param in page.get("Parameters", []):
                found[param["Name"]] = param["Value"]
        return found

    def read(self, tenant: str) -> dict[str, Any] | None:
        """The tenant's document assembled as the ``ssm`` source assembles it."""
        # Loaded per command: the assembly the ssm source uses, with its imports.
        from foldgate.config.ssm import assemble

        base = self.base(tenant)
        found = self._parameters(tenant)
        raw = found.pop(f"{base}/config", None)
        if raw is None:
            return None
        servers = {name[len(f"{base}/servers/") :]: value for name, value in found.items()}
        return self.normalized(assemble(raw, servers, base))

    def _desired(self, tenant: str, doc: dict[str, Any]) -> dict[str, str]:
        base = self.base(tenant)
        top = {k: v for k, v in doc.items() if k != "servers"}
        wanted = {f"{base}/config": json.dumps(top, ensure_ascii=False, sort_keys=True)}
        for i, server in enumerate(doc.get("servers") or []):
            body = {k: v for k, v in server.items() if k != "name"}
            wanted[f"{base}/servers/{server['name']}"] = json.dumps(body, ensure_ascii=False, sort_keys=True)
            if len(wanted[f"{base}/servers/{server['name']}"].encode("utf-8")) > _STANDARD_BYTES:
                raise ConfigError(f"servers[{i}]: longer than Parameter Store's 4 KB standard tier as JSON")
        if len(wanted[f"{base}/config"].encode("utf-8")) > _STANDARD_BYTES:
            raise ConfigError(
                "the settings beside servers are longer than Parameter Store's 4 KB standard tier"
            )
        return wanted

    def write(self, tenant: str, doc: dict[str, Any]) -> bool:
        """Changed parameters put, removed servers' deleted, ``config`` last (the readers find every
        server it is read with)."""
        wanted = self._desired(tenant, self.normalized(doc))
        current = self._parameters(tenant)
        config_name = f"{self.base(tenant)}/config"
        changed = [n for n in wanted if n not in current or not _same_json(current[n], wanted[n])]
        removed = sorted(n for n in current if n not in wanted)
        for name in sorted(changed, key=lambda n: n == config_name):
            self.client.put_parameter(
                Name=name, Value=wanted[name], Type="String", Overwrite=True, Tier="Standard"
            )
        for start in range(0, len(removed), 10):  # DeleteParameters takes at most 10 names
            self.client.delete_parameters(Names=removed[start : start + 10])
        return bool(changed or removed)


class FileTarget(ConfigTarget):
    """The local config file (one tenant): validated by the local rules, rewritten whole."""

    cloud = False

    def __init__(self, path: str | Path, prefix: str = "/foldgate") -> None:
        super().__init__(prefix)
        self.path = Path(path)

    def describe(self, tenant: str) -> str:
        """The file."""
        return str(self.path)

    def read(self, tenant: str) -> dict[str, Any] | None:
        """The file's document, None when there is no file."""
        # Loaded per command: the reader the file source uses.
        from foldgate.config.tenant import read_config_document

        if not self.path.exists():
            return None
        doc = read_config_document(self.path)
        if not isinstance(doc, dict):
            raise ConfigError(f"invalid tenant config in {self.path}: expected a mapping")
        return doc

    def write(self, tenant: str, doc: dict[str, Any]) -> bool:
        """The document written atomically (same directory, the file's mode, else 0600), in the file's
        format (YAML unless it is ``.json``); nothing when unchanged."""
        current = self.read(tenant)
        if current is not None and canonical(current) == canonical(doc):
            return False
        text = dump_document(doc, "json" if self.path.suffix == ".json" else "yaml")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        mode = self.path.stat().st_mode & 0o777 if self.path.exists() else 0o600
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                os.fchmod(f.fileno(), mode)
                f.write(text)
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return True
