"""A code run ends before the request's deadline (issue 24, item 10): agent JavaScript in the real
sandbox whose tool call hangs is stopped early enough for its answer to reach the agent, with the
cut ``timeout_ms`` and what to do; without a deadline the run keeps its own timeout."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from foldgate.code.sandbox import Sandbox
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import ServerConfig
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.deadline import answering_by
from foldgate.serve.gateway import Gateway
from foldgate.serve.surfaces.code import RUN_DEADLINE_HINT
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools
from tests.helpers import error_of

CODE = 'return await call_tool("crm", "find_contact", {query: "ada"});'


class HangingUpstream(RecordingUpstream):
    """Every call waits until the test ends it (an upstream that never answers)."""

    def __init__(self) -> None:
        super().__init__()
        self.never = asyncio.Event()

    async def call_tool(
        self,
        server: ServerConfig,
        name: str,
        arguments: dict[str, Any],
        *,
        annotations: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        await self.never.wait()
        return await super().call_tool(server, name, arguments, annotations=annotations)


@pytest.fixture
async def gateway() -> AsyncIterator[Gateway]:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    config = demo_config(routing_mode="code_execution", code_execution={"timeout_ms": 1500})
    upstream = HangingUpstream()
    gw = Gateway(store, StaticConfigSource({"default": config}), upstream, catalog_ttl=60, sandbox=Sandbox)
    # A warm worker, as on a warm instance: the deadline then bounds the run itself.
    await gw.call("default", "code_execution", {"code": "return 1;"}, "code")
    yield gw
    upstream.never.set()
    await gw.aclose()


async def test_a_run_is_cut_before_the_requests_deadline(gateway: Gateway) -> None:
    started = time.monotonic()
    with answering_by(started + 0.8):
        result = await gateway.call("default", "code_execution", {"code": CODE}, "code")
    elapsed = time.monotonic() - started
    err = error_of(result)
    assert err["error_type"] == "timeout"
    assert err["timeout_ms"] < 800
    assert err["hint"] == RUN_DEADLINE_HINT
    assert elapsed < 1.4  # the run's timeout plus its abort grace, inside the answer margin


async def test_without_a_deadline_the_run_keeps_its_own_timeout(gateway: Gateway) -> None:
    started = time.monotonic()
    result = await gateway.call("default", "code_execution", {"code": CODE}, "code")
    err = error_of(result)
    assert err["error_type"] == "timeout"
    assert "1500 ms" in err["error"]
    assert "hint" not in err
    assert time.monotonic() - started >= 1.5
