"""The session pool's rules that need no upstream: retry safety, session identity, concurrency slots."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from foldgate.config.tenant import ServerConfig
from foldgate.errors import ConfigError, UpstreamBusyError
from foldgate.upstream.pool import SessionKey, SessionPool, retry_safe


def server(**kw: Any) -> ServerConfig:
    return ServerConfig.model_validate({"name": "up", "url": "http://127.0.0.1:9/mcp", **kw})


@pytest.mark.parametrize(
    ("annotations", "safe"),
    [
        (None, False),
        ({}, False),
        ({"readOnlyHint": True}, True),
        ({"idempotentHint": True}, True),
        ({"readOnlyHint": False, "idempotentHint": False}, False),
        ({"readOnlyHint": "true"}, False),  # only a real JSON true counts
        ({"idempotentHint": 1}, False),
        ({"destructiveHint": False}, False),  # not destructive is not the same as repeatable
    ],
)
def test_only_read_only_or_idempotent_tools_may_run_twice(annotations: Any, safe: bool) -> None:
    assert retry_safe(annotations) is safe


def test_a_session_belongs_to_name_url_and_resolved_headers_not_to_the_timeout() -> None:
    base = SessionKey.of(server(), {"a": "1", "b": "2"})
    assert SessionKey.of(server(timeout_s=3), {"b": "2", "a": "1"}) == base
    assert SessionKey.of(server(), {"a": "1", "b": "rotated"}) != base
    assert SessionKey.of(server(url="http://127.0.0.1:9/other"), {"a": "1", "b": "2"}) != base
    assert SessionKey.of(server(name="up2"), {"a": "1", "b": "2"}) != base


async def test_a_caller_beyond_max_concurrency_waits_then_gets_upstream_busy() -> None:
    pool = SessionPool(allow_private=True)
    cfg = server(max_concurrency=2, queue_timeout_s=0.1)
    async with contextlib.AsyncExitStack() as held:
        for _ in range(2):
            await held.enter_async_context(pool.slot(cfg))
        started = asyncio.get_running_loop().time()
        with pytest.raises(UpstreamBusyError) as info:
            async with pool.slot(cfg):
                pass
        assert asyncio.get_running_loop().time() - started >= 0.09
        assert info.value.code == "upstream_busy"
        assert info.value.message.startswith("up: upstream busy: 2 calls already in flight")


async def test_a_freed_slot_goes_to_the_waiting_caller() -> None:
    pool = SessionPool(allow_private=True)
    cfg = server(max_concurrency=1, queue_timeout_s=2)
    release = asyncio.Event()

    async def holder() -> None:
        async with pool.slot(cfg):
            await release.wait()

    task = asyncio.create_task(holder())
    await asyncio.sleep(0)
    asyncio.get_running_loop().call_later(0.05, release.set)
    async with pool.slot(cfg):
        assert task.done()


async def test_upstreams_do_not_share_slots() -> None:
    pool = SessionPool(allow_private=True)
    slow, other = server(max_concurrency=1, queue_timeout_s=0.05), server(name="other", max_concurrency=1)
    async with pool.slot(slow), pool.slot(other):
        with pytest.raises(UpstreamBusyError):
            async with pool.slot(slow):
                pass


def test_slots_held_on_a_finished_event_loop_do_not_block_the_next_one() -> None:
    pool = SessionPool(allow_private=True)
    cfg = server(max_concurrency=1, queue_timeout_s=0.1)

    async def take_and_abandon() -> None:
        await pool.slot(cfg).__aenter__()  # never released: the loop ends under it

    async def take() -> bool:
        async with pool.slot(cfg):
            return True

    asyncio.run(take_and_abandon())
    assert asyncio.run(take())


@pytest.mark.parametrize(
    ("field", "value"),
    [("max_concurrency", 0), ("max_concurrency", 257), ("queue_timeout_s", 0), ("queue_timeout_s", 61)],
)
def test_concurrency_settings_are_bounded(field: str, value: float) -> None:
    from foldgate.config.tenant import parse_tenant_config

    with pytest.raises(ConfigError, match=field):
        parse_tenant_config({"servers": [{"name": "up", "url": "http://x/mcp", field: value}]})


def test_the_default_bounds_every_upstream() -> None:
    assert server().max_concurrency == 16
    assert server().queue_timeout_s == 5.0
