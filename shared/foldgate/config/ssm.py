"""Tenant configs from SSM Parameter Store (the cloud config source); upstream header secrets are read
from the same tree by :mod:`foldgate.auth.secret_headers`.

Parameter layout under the stack's ``config_prefix`` (default ``/foldgate``)::

    {prefix}/tenants/{tenant}/config          String  JSON TenantConfig (servers may be inline)
    {prefix}/tenants/{tenant}/servers/{name}  String  JSON ServerConfig, one per server ("name" optional)
    {prefix}/tenants/{tenant}/secrets/{name}  SecureString  JSON object of upstream request headers

Servers are split into their own parameters so every parameter stays within the 4 KB Standard tier
(free, no Advanced-tier charge); a server referring to ``headers_secret: "github"`` reads
``.../secrets/github``; an absolute name must point under that same path (a tenant never reads
another tenant's secrets), and ``stdio`` servers are refused (the cloud runs no program from a config).
Reads go through Powertools Parameters with a max age, so a change applies on the next request after
the cache expires. A document that fails validation is rejected with a message naming the parameter
and field, and the tenant's last good config keeps serving.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from foldgate.config.source import ConfigSource
from foldgate.config.tenant import TenantConfig, parse_tenant_config
from foldgate.errors import ConfigError, NotFoundError
from foldgate.model.lru import MemoryBudget, text_bytes

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SSMProvider

__all__ = ["SsmConfigSource", "parameter_json", "ssm_provider", "tenant_of_parameter"]

log = logging.getLogger(__name__)

# A parsed config (pydantic models) against its documents' JSON text.
_BYTES_PER_CONFIG_CHAR = 8
# A secret's name below the tenant's secrets path: parameter-name characters, no empty segments.
_SECRET_NAME = re.compile(r"^[A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*$")


def ssm_provider(client: Any | None, memory: MemoryBudget | None = None, *, kind: str = "ssm") -> SSMProvider:
    """A Powertools SSM provider (over the given boto3 client, else a new one with bounded retries)
    whose cache is the ``kind`` shelf of the memory budget (see :mod:`foldgate.config.ssm_cache`)."""
    # Imported here: Powertools Parameters pulls in boto3, paid only by instances that read SSM.
    from foldgate.config.ssm_cache import BoundedSSMProvider

    if client is None:
        # boto3 and Powertools Parameters load only in instances that read Parameter Store.
        import boto3
        from botocore.config import Config

        client = boto3.client(
            "ssm", config=Config(retries={"mode": "standard", "max_attempts": 4}, connect_timeout=2)
        )
    return BoundedSSMProvider(boto3_client=client, memory=memory or MemoryBudget(), kind=kind)


def tenant_of_parameter(name: str, prefix: str) -> str | None:
    """The tenant a parameter name belongs to (``{prefix}/tenants/{tenant}/...``), None otherwise."""
    head = prefix.rstrip("/") + "/tenants/"
    if not name.startswith(head):
        return None
    tenant = name[len(head) :].split("/", 1)[0]
    return tenant or None


class SsmConfigSource(ConfigSource):
    """Tenant configs read from Parameter Store, cached ``max_age`` seconds, last good kept per tenant."""

    def __init__(
        self,
        prefix: str,
        *,
        max_age: float = 30.0,
        client: Any | None = None,
        fallback: Callable[[str], TenantConfig | None] | None = None,
        memory: MemoryBudget | None = None,
    ) -> None:
        if not prefix.startswith("/"):
            raise ConfigError(f"config prefix {prefix!r} must start with '/'")
        self.prefix = prefix.rstrip("/")
        self.max_age = max(0, int(max_age))
        memory = memory if memory is not None else MemoryBudget()
        self._ssm = ssm_provider(client, memory, kind="ssm_config")
        self._client = self._ssm.client
        self._lock = threading.Lock()
        # By tenant: (the documents' fingerprint, the config parsed from them), the last good one.
        # Evicted, it is parsed again from the documents (or, when they are invalid, the fallback's).
        self._parsed = memory.shelf("config")
        # Only tenants whose live documents are invalid (a few strings): not budgeted.
        self.last_errors: dict[str, str] = {}
        # Where a fresh instance finds a last good config when the live document is invalid: the MCP
        # function passes the config stored with the tenant's current catalog (see app.wiring).
        self.fallback = fallback

    def tenant_path(self, tenant: str) -> str:
        """The parameter path holding one tenant's documents."""
        return f"{self.prefix}/tenants/{tenant}"

    def _read(self, tenant: str, force: bool) -> TenantConfig:
        # boto3 and Powertools Parameters load only in instances that read Parameter Store.
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

        base = self.tenant_path(tenant)
        try:
            raw = self._ssm.get(f"{base}/config", max_age=self.max_age, force_fetch=force)
            servers = self._ssm.get_multiple(f"{base}/servers", max_age=self.max_age, force_fetch=force)
        except GetParameterError as exc:
            if "ParameterNotFound" in str(exc):
                raise NotFoundError(f"unknown tenant {tenant!r}") from None
            raise ConfigError(f"cannot read {base}/config from Parameter Store: {exc}") from exc
        fingerprint = (raw, tuple(sorted(servers.items())))
        memo: tuple[Any, TenantConfig] | None = self._parsed.get(tenant)
        if memo is not None and memo[0] == fingerprint:
            # Same documents: the same object, so views keyed on it stay cached (no re-validation).
            return memo[1]
        config = self._parse(raw, servers, base)
        texts = [raw, *servers.values()]
        size = _BYTES_PER_CONFIG_CHAR * sum(len(t) for t in texts if isinstance(t, str | bytes)) + 2048
        self._parsed.put(tenant, (fingerprint, config), size + text_bytes(*(str(k) for k in servers)))
        return config

    def _parse(self, raw: Any, servers: dict[str, Any], base: str) -> TenantConfig:
        doc = parameter_json(raw, f"{base}/config")
        if not isinstance(doc, dict):
            raise ConfigError(f"invalid tenant config in {base}/config: expected a JSON object")
        inline = list(doc.get("servers") or [])
        for key in sorted(servers):
            name = f"{base}/servers/{key}"
            server = parameter_json(servers[key], name)
            if not isinstance(server, dict):
                raise ConfigError(f"invalid server config in {name}: expected a JSON object")
            inline.append({"name": key.rsplit("/", 1)[-1], **server})
        # Parameter Store is the cloud, where no issuer on this machine's loopback can be trusted.
        config = parse_tenant_config({**doc, "servers": inline}, source=base, allow_loopback=False)
        return self._absolute_secrets(config, base)

    def _absolute_secrets(self, config: TenantConfig, base: str) -> TenantConfig:
        # Resolve secret names now, so the header source needs no tenant context; a name may point only
        # under this tenant's own secrets (never another tenant's or the stack's).
        servers = []
        for s in config.servers:
            if s.transport == "stdio":
                raise ConfigError(
                    f"invalid tenant config in {base}: server {s.name!r}: transport 'stdio' runs a program "
                    "and is available only in local mode; use streamable_http"
                )
            if s.headers_secret:
                s = s.model_copy(
                    update={
                        "headers_secret": _own_secret(
                            s.headers_secret, f"server {s.name!r}: headers_secret", base
                        )
                    }
                )
            # The auth: block's client secret and private key obey the same rule (a tenant must never
            # have foldgate send the stack's or another tenant's secret to its authorization server).
            names = {f: getattr(s.auth, f, None) for f in ("client_secret_secret", "private_key_secret")}
            resolved = {
                f: _own_secret(v, f"server {s.name!r}: auth.{f}", base) for f, v in names.items() if v
            }
            if resolved:
                s = s.model_copy(update={"auth": s.auth.model_copy(update=resolved)})
            servers.append(s)
        return config.model_copy(update={"servers": servers})

    def get(self, tenant: str, *, force: bool = False) -> TenantConfig:
        """The tenant's config; a bad document keeps the last good one (and is logged with its reason).

        ``force`` bypasses the cache (the indexer uses it on a Parameter Store change event).
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

    def tenants(self) -> list[str]:
        """Every tenant that has a ``config`` parameter (names only; values are not fetched)."""
        found: set[str] = set()
        paginator = self._client.get_paginator("describe_parameters")
        filters = [{"Key": "Path", "Option": "Recursive", "Values": [f"{self.prefix}/tenants"]}]
        for page in paginator.paginate(ParameterFilters=filters):
            for param in page.get("Parameters", []):
                name = param["Name"]
                tenant = tenant_of_parameter(name, self.prefix)
                if tenant and name == f"{self.tenant_path(tenant)}/config":
                    found.add(tenant)
        return sorted(found)


def _own_secret(secret: str, what: str, base: str) -> str:
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


def parameter_json(raw: Any, name: str) -> Any:
    """A parameter's value parsed as JSON; ConfigError naming the parameter (never its value) otherwise."""
    if isinstance(raw, bytes):
        raw = raw.decode("utf-8")
    if not isinstance(raw, str):
        raise ConfigError(f"parameter {name} is not text")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise ConfigError(f"parameter {name} is not valid JSON: {exc}") from None
