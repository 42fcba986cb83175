"""The auth rows of `foldgate bench serve`: both credential kinds go through the real app, and a warm
verifier reads the issuer once (discovery + JWKS) however many JWTs it validates."""

from __future__ import annotations

from foldgate.config.source import StaticConfigSource
from foldgate.dev.bench.auth import run_auth_bench
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools


async def test_rows_for_each_credential_and_one_issuer_read_per_instance() -> None:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    gateway = Gateway(
        store, StaticConfigSource({"default": demo_config()}), RecordingUpstream(), catalog_ttl=60
    )
    rows = await run_auth_bench(gateway, 20)
    for name in ("fgt_token", "jwt_es256", "jwt_rs256"):
        assert rows[name]["p50_ms"] > 0
        assert rows[name]["p95_ms"] >= rows[name]["p50_ms"]
    assert rows["jwt_es256"]["vs_fgt"] > 0
    # Warm: 2 reads (discovery, JWKS) for 2 x 22 JWT requests; then 3 cold instances, 2 reads each.
    assert rows["issuer_fetches"] == 2 + 3 * 2
    assert rows["jwt_cold_first_ms"] > 0
