"""Settling the heap (foldgate.app.heap): what is alive is frozen out of full collections, what comes
later is collected as before, and the serving processes settle once, after they built what they keep."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.app.heap import YOUNG_THRESHOLD, collect_young_less_often, settle_heap
from foldgate.app.local import build_local
from foldgate.config.settings import Settings
from foldgate.config.source import StaticConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import IndexReport
from tests.unit.app.function_init import after_init

REPO = Path(__file__).resolve().parents[3]


class Node:
    """A reference cycle's member (only the cycle collector frees it)."""

    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def thawed() -> Iterator[None]:
    yield
    gc.unfreeze()  # the test process's other tests see the collector as it was


def test_what_is_alive_leaves_the_collectors_generations() -> None:
    kept = [["long-lived"]]
    frozen = settle_heap()
    assert frozen == gc.get_freeze_count() > 0
    assert not any(o is kept for o in gc.get_objects())  # no collection walks it now


def test_garbage_made_after_settling_is_collected_as_before() -> None:
    settle_heap()
    cycle = Node()
    gone = weakref.ref(cycle)
    del cycle
    gc.collect()
    assert gone() is None


def test_settling_with_a_collection_frees_cyclic_garbage_instead_of_freezing_it() -> None:
    cycle = Node()
    gone = weakref.ref(cycle)
    del cycle
    settle_heap(collect=True)
    assert gone() is None


@pytest.mark.parametrize("name", ["mcp", "code"])
def test_the_agent_functions_settle_at_the_end_of_init(name: str, tmp_path: Path) -> None:
    out = after_init(name, tmp_path, "import gc; print(gc.get_freeze_count(), len(gc.get_objects()))")
    frozen, walked = map(int, out.split())
    # Init's objects are frozen; a full collection walks only what came after (a handful here).
    assert frozen > 10_000
    assert walked < frozen / 10


async def test_the_local_server_settles_once_after_its_first_index_run(tmp_path: Path) -> None:
    settings = Settings(sqlite_path=str(tmp_path / "fg.sqlite3"), embedding_provider="none")
    configs = StaticConfigSource({"acme": parse_tenant_config({"servers": []})})
    local = build_local(configs, settings, interval_s=0.01)
    runs: list[bool] = []
    settled: list[bool] = []
    index_all = local.index_all

    async def counted() -> list[IndexReport]:
        reports = await index_all()
        runs.append(bool(settled))
        return reports

    local.index_all = counted  # type: ignore[method-assign]
    local.after_first_index = lambda: settled.append(True)
    async with local.app.router.lifespan_context(local.app):
        while len(runs) < 3:
            await asyncio.sleep(0.01)
    assert settled == [True]
    assert runs[:3] == [False, True, True]  # after the first run, not before it, and only once


def test_the_young_generation_is_collected_less_often_a_higher_threshold_kept_and_off_left_off() -> None:
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        collect_young_less_often()
        raised = gc.get_threshold()
        gc.set_threshold(50_000, 5, 5)
        collect_young_less_often()
        kept = gc.get_threshold()
        gc.set_threshold(0)
        collect_young_less_often()
        off = gc.get_threshold()[0]
    finally:
        gc.set_threshold(*before)
    assert (raised, kept, off) == ((YOUNG_THRESHOLD, 10, 10), (50_000, 5, 5), 0)
