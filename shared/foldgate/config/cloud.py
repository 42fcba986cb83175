"""What both cloud config sources share (Parameter Store documents, table documents): how a document
becomes a config there, and how a bad document keeps the tenant's last good config.

In the cloud a config is hostile input read by functions that hold the stack's credentials: no issuer
on loopback, no ``stdio`` server (the cloud runs no program from a config), and every secret a config
names must lie under that tenant's own ``{prefix}/tenants/{tenant}/secrets/`` in Parameter Store
(never another tenant's, never the stack's).
"""

from __future__ import annotations

import logging
import re
import threading
from abc import abstractmethod
from collections.abc import Callable
from functools import partial
from typing import Any

from foldgate.config.source import ConfigSource
from foldgate.config.tenant import TenantConfig, parse_tenant_config
from foldgate.config.upstream_auth import with_secrets
from foldgate.errors import ConfigError, NotFoundError
from foldgate.model.lru import MemoryBudget

__all__ = ["CloudConfigSource", "own_secret", "parse_cloud_config", "tenant_path"]

log = logging.getLogger(__name__)

# A parsed config (pydantic models) against its documents' JSON text.
_BYTES_PER_CONFIG_CHAR = 8
# A secret's name below the tenant's secrets path: parameter-name characters, no empty segments.
_SECRET_NAME = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*$")


def tenant_path(prefix: str, tenant: str) -> str:
    """The Parameter Store path of a tenant's documents and secrets (``{prefix}/tenants/{tenant}``)."""
    return f"{prefix.rstrip('/')}/tenants/{tenant}"


def parse_cloud_config(doc: dict[str, Any], base: str, *, allow_private: bool = True) -> TenantConfig:
    """A validated cloud config from a whole document (servers inline); ``base`` is the tenant's
    Parameter Store path, which its secret names are resolved under. ConfigError naming ``base``.
    ``allow_private`` False (a save to a deployment without private upstreams) refuses loopback and
    private address literals in server URLs."""
    # The cloud, where no issuer on this machine's loopback can be trusted.
    config = parse_tenant_config(doc, source=base, allow_loopback=False, allow_private=allow_private)
    servers = []
    for s in config.servers:
        if s.transport == "stdio":
            raise ConfigError(
                f"invalid tenant config in {base}: server {s.name!r}: transport 'stdio' runs a program "
                "and is available only in local mode; use streamable_http"
            )
        # Secret names are resolved now, so the header source needs no tenant context.
        if s.headers_secret:
            named = own_secret(s.headers_secret, f"server {s.name!r}: headers_secret", base)
            s = s.model_copy(update={"headers_secret": named})
        # The auth: block's client secret and private key obey the same rule (a tenant must never
        # have foldgate send the stack's or another tenant's secret to its authorization server).
        assertion = getattr(s.auth, "assertion", None)
        if assertion is not None and assertion.source in ("file", "command"):
            raise ConfigError(
                f"invalid tenant config in {base}: server {s.name!r}: assertion source "
                f"{assertion.source!r} reads the gateway's own disk or runs its programs and is available "
                "only in local mode; use aws_sts or secret"
            )
        # The same for the IdP's and the token sources' secrets of the exchange kinds, and a workload
        # assertion's secret.
        auth = with_secrets(s.auth, partial(_own_auth_secret, f"server {s.name!r}: auth.", base))
        if auth is not s.auth:
            s = s.model_copy(update={"auth": auth})
        servers.append(s)
    return config.model_copy(update={"servers": servers})


def _own_auth_secret(what: str, base: str, path: str, secret: str) -> str:
    return own_secret(secret, what + path, base)


def own_secret(secret: str, what: str, base: str) -> str:
    """The absolute parameter name of a tenant's secret; ConfigError unless it is under its own
    ``{base}/secrets/`` (never another tenant's or the stack's)."""
    own = f"{base}/secrets/"
    path = secret if secret.startswith("/") else own + secret
    rest = path[len(own) :] if path.startswith(own) else ""
    if not _SECRET_NAME.match(rest) or ".." in rest.split("/"):
        raise ConfigError(
            f"invalid tenant config in {base}: {what} must name a parameter under {own} (got {secret!r})"
        )
    return path


class CloudConfigSource(ConfigSource):
    """A cloud source's reading rules: a bad document keeps the tenant's last good config (this
    instance's, else ``fallback``'s: the config stored with the tenant's current catalog), and why it
    was refused is kept for the admin API. Subclasses read and parse (``_read``)."""

    def __init__(
        self,
        fallback: Callable[[str], TenantConfig | None] | None = None,
        memory: MemoryBudget | None = None,
    ) -> None:
        self._lock = threading.Lock()
        memory = memory if memory is not None else MemoryBudget()
        # By tenant: (the documents' fingerprint, the config parsed from them), the last good one, on
        # the instance's memory budget. Evicted, it is parsed again from the documents (or, when they
        # are invalid, the fallback's).
        self._parsed = memory.shelf("config")
        # Only tenants whose live documents are invalid (a few strings): not budgeted.
        self.last_errors: dict[str, str] = {}
        # Where a fresh instance finds a last good config when the live document is invalid: the MCP
        # function passes the config stored with the tenant's current catalog (see app.wiring).
        self.fallback = fallback

    def _recall(self, tenant: str, fingerprint: Any) -> TenantConfig | None:
        """The config parsed from these very documents, if this instance still holds it (the same
        object, so views keyed on it stay cached and nothing is validated again)."""
        memo: tuple[Any, TenantConfig] | None = self._parsed.get(tenant)
        return memo[1] if memo is not None and memo[0] == fingerprint else None

    def _remember(self, tenant: str, fingerprint: Any, config: TenantConfig, doc_chars: int) -> None:
        """Keep a freshly parsed config (``doc_chars``: its documents' length, for its size)."""
        self._parsed.put(tenant, (fingerprint, config), _BYTES_PER_CONFIG_CHAR * doc_chars + 2048)

    @abstractmethod
    def _read(self, tenant: str, force: bool) -> TenantConfig:
        """The tenant's live config; NotFoundError for an unknown tenant, ConfigError for a bad one."""

    def get(self, tenant: str, *, force: bool = False) -> TenantConfig:
        """The tenant's config; a bad document keeps the last good one (and is logged with its reason).

        ``force`` bypasses the cache (the indexer uses it on a config change).
        """
        try:
            config = self._read(tenant, force)
        except NotFoundError:
            self._parsed.pop(tenant)
            raise
        except ConfigError as exc:
            with self._lock:
                self.last_errors[tenant] = exc.message
            memo: tuple[Any, TenantConfig] | None = self._parsed.get(tenant)
            good = memo[1] if memo is not None else None
            if good is None and self.fallback is not None:
                good = self.fallback(tenant)
            if good is None:
                raise
            log.error("tenant %s: keeping the last good config: %s", tenant, exc.message)
            return good
        with self._lock:
            self.last_errors.pop(tenant, None)
        return config

    def problem(self, tenant: str) -> str | None:
        """The validation error of the tenant's live documents while a last good config serves."""
        with self._lock:
            return self.last_errors.get(tenant)
