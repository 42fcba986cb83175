"""Build the long-lived parts from Settings: the store, the config source, the gateway, the app.

Lambda handlers call these once per instance (at init), never per request.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Literal

from foldgate.config import Settings
from foldgate.config_source import ConfigSource, FileConfigSource
from foldgate.errors import ConfigError
from foldgate.store.base import CatalogStore

if TYPE_CHECKING:
    from fastapi import FastAPI

    from foldgate.access import Access
    from foldgate.admin import Reindexer
    from foldgate.code.sandbox import Sandbox
    from foldgate.result_cache import ResultPager
    from foldgate.search.embed import Embedder
    from foldgate.store.approvals import ApprovalStore
    from foldgate.upstream import UpstreamClient

log = logging.getLogger(__name__)

__all__ = [
    "build_mcp_app",
    "lazy_embedder",
    "open_access",
    "open_approvals",
    "open_configs",
    "open_embedder",
    "open_results",
    "open_sandbox",
    "open_store",
    "open_upstream",
    "optional_secret",
]


def open_store(settings: Settings) -> CatalogStore:
    """The catalog store the settings name."""
    if settings.store == "sqlite":
        from foldgate.store.sqlite import SqliteStore

        return SqliteStore(settings.sqlite_path)
    if settings.store == "dynamodb":
        from foldgate.store.dynamodb import DynamoStore

        return DynamoStore(settings.table_name)
    raise ConfigError(f"store {settings.store!r} is not available in this build")


def open_configs(settings: Settings) -> ConfigSource:
    """The tenant config source the settings name."""
    if settings.config_source == "file":
        return FileConfigSource(
            settings.config_file, tenant=settings.default_tenant, max_age=settings.config_cache_seconds
        )
    if settings.config_source == "ssm":
        from foldgate.ssm_config import SsmConfigSource

        return SsmConfigSource(settings.config_prefix, max_age=settings.config_cache_seconds)
    raise ConfigError(f"config source {settings.config_source!r} is not available in this build")


def open_results(settings: Settings) -> ResultPager:
    """Where oversized tool results wait for read_cache: the same backend as the catalog store."""
    from foldgate.result_cache import ResultPager

    if settings.store == "dynamodb":
        from foldgate.store.dynamodb_results import DynamoResultStore

        return ResultPager(DynamoResultStore(settings.table_name), ttl_seconds=settings.result_cache_seconds)
    from foldgate.store.results import SqliteResultStore

    return ResultPager(SqliteResultStore(settings.sqlite_path), ttl_seconds=settings.result_cache_seconds)


def open_upstream(settings: Settings) -> UpstreamClient:
    """The upstream client; in the cloud, servers' ``headers_secret`` come from Parameter Store."""
    from foldgate.upstream import UpstreamClient

    if settings.config_source == "ssm":
        from foldgate.ssm_config import SecretHeaders

        return UpstreamClient(
            headers=SecretHeaders(max_age=settings.secrets_cache_seconds),
            allow_private=settings.allow_private_upstreams,
        )
    return UpstreamClient(allow_private=settings.allow_private_upstreams)


def open_approvals(settings: Settings) -> ApprovalStore:
    """Approved tool versions, on the same backend as the catalog."""
    if settings.store == "dynamodb":
        from foldgate.store.dynamodb_approvals import DynamoApprovalStore

        return DynamoApprovalStore(settings.table_name)
    from foldgate.store.approvals import SqliteApprovalStore

    return SqliteApprovalStore(settings.sqlite_path)


def optional_secret(settings: Settings, name: Literal["token", "operator"]) -> bytes | None:
    """The named secret, or None (logged) when it is not configured: what it guards stays closed."""
    from foldgate.auth.secrets import load_secret

    try:
        return load_secret(settings, name)
    except ConfigError as exc:
        # Fail closed: without the secret nothing it guards can be used (logged, never shown to callers).
        log.error("%s secret unavailable: %s", name, exc.message)
        return None


def open_access(settings: Settings) -> Access:
    """Request authentication (agent tokens; OAuth access tokens when an issuer is set) and the
    per-caller rate limit."""
    from foldgate.access import Access
    from foldgate.auth.oauth.setup import open_oauth
    from foldgate.auth.store import open_token_store
    from foldgate.auth.tokens import TokenAuthority, TokenHasher
    from foldgate.ratelimit import RateLimiter

    secret = optional_secret(settings, "token")
    authority = TokenAuthority(open_token_store(settings), TokenHasher(secret)) if secret else None
    return Access(
        default_tenant=settings.default_tenant,
        allow_tenant_header=settings.allow_tenant_header,
        authority=authority,
        auth_required=settings.auth_required,
        # 0 turns the limiter off (e.g. behind a gateway that already throttles per client).
        limiter=RateLimiter(settings.rate_limit_per_minute) if settings.rate_limit_per_minute > 0 else None,
        oauth=open_oauth(settings),
    )


def open_embedder(settings: Settings) -> Embedder:
    """The embedding provider the settings name (a lexical-only stand-in when it cannot load)."""
    from foldgate.search.embed import open_provider

    if settings.embedding_provider == "local":
        return open_provider("local", model_dir=settings.model_dir)
    if settings.embedding_provider == "bedrock":
        return open_provider("bedrock", dimensions=settings.bedrock_dimensions)
    return open_provider("none")


def lazy_embedder(settings: Settings) -> Callable[[], Embedder]:
    """The provider, opened on first use: the request path pays for numpy and the model only when a
    search needs them, not at every cold start."""
    opened: list[Embedder] = []
    lock = threading.Lock()

    def get() -> Embedder:
        with lock:
            if not opened:
                opened.append(open_embedder(settings))
            return opened[0]

    return get


def open_sandbox(settings: Settings) -> Callable[[], Sandbox] | None:
    """A factory for the agent-code sandbox where this process runs code (its worker starts on first use)."""
    if not settings.serve_code:
        return None

    def start() -> Sandbox:
        from foldgate.code.sandbox import Sandbox

        return Sandbox()

    return start


def build_mcp_app(settings: Settings, *, reindex: Reindexer | None = None, admin_api: bool = True) -> FastAPI:
    """The MCP endpoint app for the settings (the McpFunction's whole dependency graph; the
    CodeFunction's without the admin API)."""
    from foldgate.admin import admin_router
    from foldgate.gateway import Gateway
    from foldgate.http import create_app

    configs = open_configs(settings)
    gateway = Gateway(
        open_store(settings),
        configs,
        open_upstream(settings),
        catalog_ttl=settings.catalog_cache_seconds,
        results=open_results(settings),
        embedder=lazy_embedder(settings),
        hybrid_weight=settings.hybrid_weight,
        sandbox=open_sandbox(settings),
    )
    if settings.config_source == "ssm":
        from foldgate.ssm_config import SsmConfigSource

        # A fresh instance facing an invalid live config serves with the one its catalog was built from.
        assert isinstance(configs, SsmConfigSource)
        configs.fallback = gateway.indexed_config
    if reindex is None and settings.indexer_function:
        from foldgate.reindex import lambda_reindexer

        reindex = lambda_reindexer(settings.indexer_function)
    admin = None
    if admin_api:
        admin = admin_router(
            gateway,
            operator_secret=optional_secret(settings, "operator"),
            approvals=open_approvals(settings),
            reindex=reindex,
        )
    return create_app(
        gateway, access=open_access(settings), max_body_bytes=settings.max_body_bytes, admin=admin
    )
