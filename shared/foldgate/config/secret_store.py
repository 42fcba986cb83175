"""Where ``foldgate tenant apply`` puts the secrets a tenant file names (:mod:`foldgate.config.secret_refs`).

* :class:`SsmSecretStore` (the cloud): SecureString parameters ``{prefix}/tenants/<t>/secrets/<name>``,
  encrypted with the account's ``aws/ssm`` key, where the functions read them;
* :class:`LocalSecretStore`: files under the state folder's ``secrets/`` (mode 0600), where local
  ``auth:`` secrets are read (:mod:`foldgate.auth.client_secrets`), each named by
  :func:`local_secret_path`.

A value is compared with what is stored in constant time and only the verdict leaves (``set``,
``changed``, ``unchanged``), so a diff or a log shows whether a secret changes, never what it is; an
unchanged secret is not written again (no new parameter version, no change event, no reindex).
"""

from __future__ import annotations

import hmac
import os
import re
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Literal

from foldgate.config.cloud import tenant_path
from foldgate.errors import ConfigError

__all__ = ["LocalSecretStore", "SecretStatus", "SecretStore", "SsmSecretStore", "local_secret_path"]

SecretStatus = Literal["set", "changed", "unchanged"]


def _verdict(current: str | None, value: str) -> SecretStatus:
    if current is None:
        return "set"
    same = hmac.compare_digest(current.encode("utf-8"), value.encode("utf-8"))
    return "unchanged" if same else "changed"


_SAFE = re.compile(r"^[A-Za-z0-9_.\-]+$")


def local_secret_path(directory: str | Path, name: str) -> Path:
    """Where the local secret ``name`` lives (ConfigError for a name that would leave the folder)."""
    flat = name.strip("/").replace("/", "__")
    if not flat or not _SAFE.match(flat) or flat.startswith("."):
        raise ConfigError(f"secret name {name[:80]!r} is not a safe local file name")
    return Path(directory) / flat


class SecretStore(ABC):
    """A tenant's secrets by name (relative to the tenant's secrets path)."""

    @abstractmethod
    def where(self, tenant: str, name: str) -> str:
        """Where the secret lives (a parameter name or a file path), never its value."""

    @abstractmethod
    def current(self, tenant: str, name: str) -> str | None:
        """The stored value (kept in memory only to compare), None when there is none."""

    @abstractmethod
    def put(self, tenant: str, name: str, value: str) -> None:
        """Store the value."""

    def status(self, tenant: str, name: str, value: str) -> SecretStatus:
        """Whether writing ``value`` sets, changes or leaves the secret as it is."""
        return _verdict(self.current(tenant, name), value)


class SsmSecretStore(SecretStore):
    """SecureString parameters under ``{prefix}/tenants/<t>/secrets/``."""

    def __init__(self, client: Any | None, prefix: str) -> None:
        self._client = client
        self.prefix = prefix.rstrip("/")

    @property
    def client(self) -> Any:
        """The ``ssm`` client, made on first use (a file without secrets never talks to SSM)."""
        if self._client is None:
            # boto3 loads only when a secret is read or written.
            import boto3

            self._client = boto3.client("ssm")
        return self._client

    def where(self, tenant: str, name: str) -> str:
        """The parameter name."""
        return f"{tenant_path(self.prefix, tenant)}/secrets/{name}"

    def current(self, tenant: str, name: str) -> str | None:
        """The decrypted value; a parameter that is not a SecureString counts as absent (it is
        replaced by one)."""
        try:
            param = self.client.get_parameter(Name=self.where(tenant, name), WithDecryption=True)["Parameter"]
        except self.client.exceptions.ParameterNotFound:
            return None
        if param.get("Type") != "SecureString":
            return None
        return str(param.get("Value", ""))

    def put(self, tenant: str, name: str, value: str) -> None:
        """A SecureString (overwriting the previous version)."""
        self.client.put_parameter(
            Name=self.where(tenant, name), Value=value, Type="SecureString", Overwrite=True
        )


class LocalSecretStore(SecretStore):
    """Files in the local state folder's ``secrets/`` directory (the local serve's secret reader)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def where(self, tenant: str, name: str) -> str:
        """The file (``/`` in a name becomes ``__``)."""
        return str(local_secret_path(self.directory, name))

    def current(self, tenant: str, name: str) -> str | None:
        """The file's text as the local reader reads it (stripped), None when absent."""
        try:
            return Path(self.where(tenant, name)).read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise ConfigError(f"cannot read secret {name!r}: {exc.strerror or exc}") from None

    def status(self, tenant: str, name: str, value: str) -> SecretStatus:
        """As stored by :meth:`put` and read back by the local reader (surrounding space stripped)."""
        return _verdict(self.current(tenant, name), value.strip())

    def put(self, tenant: str, name: str, value: str) -> None:
        """Written atomically, mode 0600, in a 0700 folder."""
        path = Path(self.where(tenant, name))
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                os.fchmod(f.fileno(), 0o600)
                f.write(value.strip() + "\n")
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
