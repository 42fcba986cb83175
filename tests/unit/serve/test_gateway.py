"""The gateway's catalog cache: bounded staleness, an unreachable store never takes down a warm
instance, and the config a catalog was indexed with is recoverable (the last good config)."""

from __future__ import annotations

import pytest

from foldgate.config.source import StaticConfigSource
from foldgate.errors import StoreError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.catalog import CatalogVersion
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools


class FlakyStore(SqliteStore):
    """A store whose reads can be switched off, as when DynamoDB is unreachable."""

    down = False

    def current_version(self, tenant: str) -> str | None:
        if self.down:
            raise StoreError("dynamodb: connection refused")
        return super().current_version(tenant)


def publish(store: SqliteStore, **config_overrides: object) -> CatalogVersion:
    catalog = catalog_from_tools("default", demo_tools())
    config = demo_config(**config_overrides).model_dump(mode="json")
    catalog = CatalogVersion(
        catalog.tenant, catalog.version, catalog.created_at, catalog.tools, config=config
    )
    store.publish(catalog, expected_current=store.current_version("default"))
    return catalog


def gateway(store: SqliteStore, ttl: float) -> Gateway:
    configs = StaticConfigSource({"default": demo_config()})
    return Gateway(store, configs, RecordingUpstream(), catalog_ttl=ttl)


def test_a_new_version_is_picked_up_once_the_ttl_passed() -> None:
    store = SqliteStore(":memory:")
    first = publish(store)
    gw = gateway(store, ttl=3600)
    assert gw.catalog("default") is not None
    second = publish(store, defer_threshold=3)
    cached = gw.catalog("default")
    assert cached is not None
    assert cached.version == first.version  # within the ttl: the cached version, no store read
    gw.catalogs.ttl = 0
    fresh = gw.catalog("default")
    assert fresh is not None
    assert fresh.version == second.version


def test_an_unreachable_store_keeps_a_warm_instance_serving() -> None:
    store = FlakyStore(":memory:")
    first = publish(store)
    gw = gateway(store, ttl=0)
    assert gw.view("default").visible
    store.down = True
    catalog = gw.catalog("default")
    assert catalog is not None
    assert catalog.version == first.version
    assert gw.view("default").visible


def test_an_unreachable_store_on_a_cold_instance_is_a_store_error() -> None:
    store = FlakyStore(":memory:")
    publish(store)
    store.down = True
    with pytest.raises(StoreError):
        gateway(store, ttl=0).catalog("default")


def test_the_indexed_config_is_the_one_stored_with_the_current_catalog() -> None:
    store = SqliteStore(":memory:")
    publish(store, defer_threshold=3)
    gw = gateway(store, ttl=0)
    config = gw.indexed_config("default")
    assert config is not None
    assert config.defer_threshold == 3
    assert gw.indexed_config("default") is config  # parsed once per version
    assert gw.indexed_config("nobody") is None
