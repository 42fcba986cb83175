"""Where tenant configs come from: a local file (one tenant) or, in the cloud, Parameter Store.

Sources cache what they read for ``max_age`` seconds, so a config change applies on the next request
after the cache expires, with no restart. A config that fails validation keeps the last good one.
"""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from pathlib import Path

from foldgate.config.tenant import TenantConfig, load_tenant_config
from foldgate.errors import ConfigError, NotFoundError

__all__ = ["ConfigSource", "FileConfigSource", "StaticConfigSource"]

log = logging.getLogger(__name__)


class ConfigSource(ABC):
    """Tenant configs by tenant id."""

    @abstractmethod
    def get(self, tenant: str, *, force: bool = False) -> TenantConfig:
        """The tenant's config; NotFoundError for an unknown tenant. ``force`` bypasses any cache."""

    @abstractmethod
    def tenants(self) -> list[str]:
        """Every configured tenant."""

    def problem(self, tenant: str) -> str | None:
        """Why the tenant's live document is not in use (a last good config is), None when it is."""
        return None

    def reload(self, tenant: str) -> TenantConfig:
        """Read the tenant's config again now (this process just wrote it)."""
        return self.get(tenant, force=True)


class StaticConfigSource(ConfigSource):
    """Fixed configs held in memory (tests, ``foldgate serve --upstream``)."""

    def __init__(self, configs: dict[str, TenantConfig]) -> None:
        self.configs = dict(configs)

    def get(self, tenant: str, *, force: bool = False) -> TenantConfig:
        """The tenant's config."""
        try:
            return self.configs[tenant]
        except KeyError:
            raise NotFoundError(f"unknown tenant {tenant!r}") from None

    def tenants(self) -> list[str]:
        """Every configured tenant."""
        return sorted(self.configs)


class FileConfigSource(ConfigSource):
    """One tenant's config from a YAML/JSON file, re-read when it changes (checked every max_age)."""

    def __init__(self, path: str | Path, *, tenant: str = "default", max_age: float = 2.0) -> None:
        self.path = Path(path)
        self.tenant = tenant
        self.max_age = max_age
        self._config = load_tenant_config(self.path)  # fail fast at startup on a bad file
        self._mtime = self._stat()
        self._checked = time.monotonic()
        self.last_error: str | None = None

    def _stat(self) -> float:
        try:
            return self.path.stat().st_mtime
        except OSError:
            return -1.0

    def get(self, tenant: str, *, force: bool = False) -> TenantConfig:
        """The tenant's config, reloaded when the file changed; a bad edit keeps the last good one."""
        if tenant != self.tenant:
            raise NotFoundError(f"unknown tenant {tenant!r}")
        now = time.monotonic()
        if force or now - self._checked >= self.max_age:
            self._checked = now
            mtime = self._stat()
            if mtime != self._mtime:
                self._mtime = mtime
                try:
                    self._config = load_tenant_config(self.path)
                    self.last_error = None
                except ConfigError as exc:
                    self.last_error = exc.message
                    log.error("keeping the last good config: %s", exc.message)
        return self._config

    def reload(self, tenant: str) -> TenantConfig:
        """Read the file now, whatever its modification time says (a save within the timestamp's
        granularity would otherwise look unchanged); ConfigError keeps the last good config."""
        if tenant != self.tenant:
            raise NotFoundError(f"unknown tenant {tenant!r}")
        self._checked = time.monotonic()
        self._mtime = self._stat()
        self._config = load_tenant_config(self.path)
        self.last_error = None
        return self._config

    def problem(self, tenant: str) -> str | None:
        """The last reload error, if the file's current content is rejected."""
        return self.last_error if tenant == self.tenant else None

    def tenants(self) -> list[str]:
        """The one tenant this file configures."""
        return [self.tenant]
