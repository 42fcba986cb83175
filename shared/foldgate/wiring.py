"""Build the long-lived parts from Settings: the store, the config source, the gateway, the app.

Lambda handlers call these once per instance (at init), never per request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from foldgate.config import Settings
from foldgate.config_source import ConfigSource, FileConfigSource
from foldgate.errors import ConfigError
from foldgate.store.base import CatalogStore

if TYPE_CHECKING:
    from fastapi import FastAPI

    from foldgate.result_cache import ResultPager
    from foldgate.upstream import UpstreamClient

__all__ = ["build_mcp_app", "open_configs", "open_results", "open_store", "open_upstream"]


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

        return UpstreamClient(headers=SecretHeaders(max_age=settings.secrets_cache_seconds))
    return UpstreamClient()


def build_mcp_app(settings: Settings) -> FastAPI:
    """The MCP endpoint app for the settings (the McpFunction's whole dependency graph)."""
    from foldgate.gateway import Gateway
    from foldgate.http import create_app

    configs = open_configs(settings)
    gateway = Gateway(
        open_store(settings),
        configs,
        open_upstream(settings),
        catalog_ttl=settings.catalog_cache_seconds,
        results=open_results(settings),
    )
    if settings.config_source == "ssm":
        from foldgate.ssm_config import SsmConfigSource

        # A fresh instance facing an invalid live config serves with the one its catalog was built from.
        assert isinstance(configs, SsmConfigSource)
        configs.fallback = gateway.indexed_config
    return create_app(
        gateway,
        default_tenant=settings.default_tenant,
        allow_tenant_header=settings.allow_tenant_header,
        max_body_bytes=settings.max_body_bytes,
    )
