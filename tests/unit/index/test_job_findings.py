"""The indexer reports what a tenant config asks that the serving functions cannot honour (issue 24,
item 10): a server timeout_s above the cloud path's ceiling is a finding in the run's report and log,
the tenant is indexed all the same, and a local run (no serving-function timeout) reports nothing."""

from __future__ import annotations

import time

import pytest

from foldgate.config.settings import Settings
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.index.indexer import Indexer
from foldgate.index.job import IndexJob, IndexRequest
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import Listing, UpstreamClient


class OneTool(UpstreamClient):
    async def list_tools(self, server: ServerConfig) -> Listing:
        return Listing(tools=[{"name": "find", "description": "Find.", "inputSchema": {"type": "object"}}])


def configs() -> StaticConfigSource:
    slow = {"name": "slow", "url": "http://127.0.0.1:9/slow", "timeout_s": 120}
    quick = {"name": "quick", "url": "http://127.0.0.1:9/quick", "timeout_s": 10}
    return StaticConfigSource({"acme": parse_tenant_config({"servers": [slow, quick]})})


async def test_a_timeout_the_serving_functions_cannot_honour_is_reported_and_indexed_anyway() -> None:
    job = IndexJob(Indexer(SqliteStore(":memory:"), OneTool()), configs(), serve_timeout_s=29)
    # The indexer's own deadline caps the listing timeouts; the finding is about the asked value.
    result = await job.run(IndexRequest("invoke", ("acme",)), deadline=time.monotonic() + 60)
    [finding] = result.findings["acme"]
    assert "'slow'" in finding
    assert "timeout_s 120" in finding
    assert result.to_doc()["config_findings"] == {"acme": [finding]}
    assert result.errors == {}
    [report] = result.reports
    assert report.changed
    assert report.tools == 2


async def test_a_local_run_reports_no_findings() -> None:
    job = IndexJob(Indexer(SqliteStore(":memory:"), OneTool()), configs())
    result = await job.run(IndexRequest("invoke", ("acme",)))
    assert result.findings == {}
    assert result.to_doc()["config_findings"] == {}


def test_the_serving_functions_timeout_is_read_from_the_environment() -> None:
    assert Settings.from_env({"FOLDGATE_SERVE_TIMEOUT_S": "29"}).serve_timeout_s == 29.0
    assert Settings.from_env({}).serve_timeout_s is None
    from foldgate.errors import ConfigError

    with pytest.raises(ConfigError):
        Settings.from_env({"FOLDGATE_SERVE_TIMEOUT_S": "0"})
