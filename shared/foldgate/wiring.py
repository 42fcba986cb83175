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

__all__ = ["build_mcp_app", "open_configs", "open_store"]


def open_store(settings: Settings) -> CatalogStore:
    """The catalog store the settings name."""
    if settings.store == "sqlite":
        from foldgate.store.sqlite import SqliteStore

        return SqliteStore(settings.sqlite_path)
    raise ConfigError(f"store {settings.store!r} is not available in this build")


def open_configs(settings: Settings) -> ConfigSource:
    """The tenant config source the settings name."""
    if settings.config_source == "file":
        return FileConfigSource(
            settings.config_file, tenant=settings.default_tenant, max_age=settings.config_cache_seconds
        )
    raise ConfigError(f"config source {settings.config_source!r} is not available in this build")


def build_mcp_app(settings: Settings) -> FastAPI:
    """The MCP endpoint app for the settings (the McpFunction's whole dependency graph)."""
    from foldgate.gateway import Gateway
    from foldgate.http import create_app
    from foldgate.upstream import UpstreamClient

    gateway = Gateway(
        open_store(settings),
        open_configs(settings),
        UpstreamClient(),
        catalog_ttl=settings.catalog_cache_seconds,
    )
    return create_app(
        gateway,
        default_tenant=settings.default_tenant,
        allow_tenant_header=settings.allow_tenant_header,
        max_body_bytes=settings.max_body_bytes,
    )
