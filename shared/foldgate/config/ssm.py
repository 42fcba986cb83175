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
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from foldgate.config.cloud import CloudConfigSource, parse_cloud_config, tenant_path
from foldgate.config.tenant import TenantConfig
from foldgate.errors import ConfigError, NotFoundError
from foldgate.model.lru import MemoryBudget

if TYPE_CHECKING:
    from aws_lambda_powertools.utilities.parameters import SSMProvider

__all__ = ["SsmConfigSource", "assemble", "parameter_json", "ssm_provider", "tenant_of_parameter"]

log = logging.getLogger(__name__)

# DescribeParameters' largest page (its API reference: MaxResults 1-50); boto3's default is 10.
_DESCRIBE_PAGE = 50


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


class SsmConfigSource(CloudConfigSource):
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
        memory = memory if memory is not None else MemoryBudget()
        super().__init__(fallback, memory)
        self.prefix = prefix.rstrip("/")
        self.max_age = max(0, int(max_age))
        self._ssm = ssm_provider(client, memory, kind="ssm_config")
        self._client = self._ssm.client

    def tenant_path(self, tenant: str) -> str:
        """The parameter path holding one tenant's documents."""
        return tenant_path(self.prefix, tenant)

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
        known = self._recall(tenant, fingerprint)
        if known is not None:
            return known
        config = self._parse(raw, servers, base)
        texts = [raw, *servers.keys(), *servers.values()]
        self._remember(tenant, fingerprint, config, sum(len(t) for t in texts if isinstance(t, str | bytes)))
        return config

    def _parse(self, raw: Any, servers: dict[str, Any], base: str) -> TenantConfig:
        return parse_cloud_config(assemble(raw, servers, base), base)

    def tenants(self) -> list[str]:
        """Every tenant that has a ``config`` parameter (names only; values are not fetched): one
        DescribeParameters call per 50 parameters of the tree, secrets and servers included (the
        ``table`` source lists 10,000 tenants in one call; docs/scale.md)."""
        found: set[str] = set()
        paginator = self._client.get_paginator("describe_parameters")
        filters = [{"Key": "Path", "Option": "Recursive", "Values": [f"{self.prefix}/tenants"]}]
        for page in paginator.paginate(
            ParameterFilters=filters, PaginationConfig={"PageSize": _DESCRIBE_PAGE}
        ):
            for param in page.get("Parameters", []):
                name = param["Name"]
                tenant = tenant_of_parameter(name, self.prefix)
                if tenant and name == f"{self.tenant_path(tenant)}/config":
                    found.add(tenant)
        return sorted(found)


def assemble(raw: Any, servers: dict[str, Any], base: str) -> dict[str, Any]:
    """One tenant document from its Parameter Store parts: the ``config`` parameter's JSON with every
    ``servers/{name}`` parameter appended to its inline servers (the ``table`` source keeps this whole
    document as one item; ``foldgate tenant migrate`` copies it there)."""
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
    return {**doc, "servers": inline}


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
