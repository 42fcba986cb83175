"""The instance's memory budget: estimated bytes never exceed it, least recently used entries go
first, an entry bigger than the whole budget is served but not kept, a tenant's catalog takes its
views and searchers along, and hits, misses and evictions are counted, also under threads."""

from __future__ import annotations

import logging
import random
import threading

import pytest

from foldgate.model.lru import MemoryBudget


def test_bytes_never_exceed_the_budget_whatever_is_stored() -> None:
    budget = MemoryBudget(10_000)
    shelves = [budget.shelf(kind) for kind in ("catalog", "view", "searcher")]
    rng = random.Random(7)
    for i in range(2_000):
        shelf = rng.choice(shelves)
        shelf.put(f"t{rng.randrange(300)}", i, rng.randrange(1, 3_000), group=f"t{i % 50}")
        assert budget.bytes <= 10_000
        assert budget.stats()["bytes"] == budget.bytes
    assert budget.stats()["evictions"] > 0


def test_the_least_recently_used_entry_is_evicted_first() -> None:
    shelf = MemoryBudget(300).shelf("catalog")
    for name in ("a", "b", "c"):
        shelf.put(name, name, 100)
    assert shelf.get("a") == "a"  # a is now the most recently used: b is the oldest
    shelf.put("d", "d", 100)
    assert shelf.get("b") is None
    assert [shelf.get(n) for n in ("a", "c", "d")] == ["a", "c", "d"]


def test_an_entry_larger_than_the_budget_is_served_but_not_kept() -> None:
    budget = MemoryBudget(1_000)
    shelf = budget.shelf("catalog")
    shelf.put("small", 1, 400)
    assert shelf.put("huge", 2, 1_001) is False
    assert shelf.get("huge") is None
    assert shelf.get("small") == 1  # nothing else was evicted to make room for it
    assert budget.stats()["oversize"] == 1


def test_replacing_an_entry_counts_its_bytes_once() -> None:
    budget = MemoryBudget(1_000)
    shelf = budget.shelf("view")
    shelf.put("k", 1, 600)
    shelf.put("k", 2, 700)
    assert budget.bytes == 700
    assert shelf.get("k") == 2


def test_evicting_a_tenants_catalog_drops_its_views_and_searchers() -> None:
    budget = MemoryBudget(1_000)
    catalogs, views, searchers = (budget.shelf(k) for k in ("catalog", "view", "searcher"))
    catalogs.put("a", "catalog a", 300, group="a", anchor=True)
    views.put(("a", "token"), "view a", 100, group="a")
    searchers.put("a", "searcher a", 100, group="a")
    catalogs.put("b", "catalog b", 300, group="b", anchor=True)
    views.put(("b", "token"), "view b", 100, group="b")
    catalogs.put("c", "catalog c", 300, group="c", anchor=True)  # over the budget: a's catalog goes
    assert catalogs.get("a") is None
    assert views.get(("a", "token")) is None
    assert searchers.get("a") is None
    assert views.get(("b", "token")) == "view b"
    assert budget.bytes == 700


def test_stats_are_plain_numbers_per_shelf_and_overall() -> None:
    budget = MemoryBudget(200)
    shelf = budget.shelf("validator")
    shelf.put("x", 1, 150)
    shelf.get("x")
    shelf.get("y")
    shelf.put("y", 2, 150)  # evicts x
    stats = budget.stats()
    assert stats["budget_bytes"] == 200
    assert (stats["hits"], stats["misses"], stats["evictions"]) == (1, 1, 1)
    assert stats["hit_rate"] == 0.5
    assert stats["kinds"]["validator"] == {
        "bytes": 150, "entries": 1, "hits": 1, "misses": 1, "hit_rate": 0.5, "evictions": 1, "oversize": 0,
    }  # fmt: skip


def test_clearing_one_shelf_keeps_the_others() -> None:
    budget = MemoryBudget(1_000)
    a, b = budget.shelf("ssm_config"), budget.shelf("ssm_secret")
    a.put("k", 1, 10)
    b.put("k", 2, 10)
    a.clear()
    assert a.get("k") is None
    assert b.get("k") == 2
    assert budget.bytes == 10


def test_threads_putting_and_getting_keep_the_bound_and_the_counts() -> None:
    budget = MemoryBudget(50_000)
    shelf = budget.shelf("catalog")
    start = threading.Barrier(8)
    over: list[int] = []

    def work(seed: int) -> None:
        rng = random.Random(seed)
        start.wait()
        for _ in range(2_000):
            key = rng.randrange(500)
            if shelf.get(key) is None:
                shelf.put(key, key, rng.randrange(100, 2_000), group=str(key % 20), anchor=key % 3 == 0)
            if budget.bytes > 50_000:
                over.append(budget.bytes)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stats = budget.stats()
    assert not over
    assert stats["hits"] + stats["misses"] == 8 * 2_000
    assert stats["bytes"] == budget.bytes <= 50_000
    assert stats["entries"] == sum(1 for k in range(500) if shelf.get(k) is not None)


def test_reading_a_tenants_catalog_keeps_its_views_and_searchers_recent() -> None:
    budget = MemoryBudget(1_000)
    catalogs, searchers = budget.shelf("catalog"), budget.shelf("searcher")
    catalogs.put("hot", "catalog", 200, group="hot", anchor=True)
    searchers.put("hot", "searcher", 200, group="hot")
    catalogs.put("b", "catalog b", 200, group="b", anchor=True)
    catalogs.put("c", "catalog c", 200, group="c", anchor=True)
    assert catalogs.get("hot") == "catalog"  # a listing: the catalog only, not the searcher
    catalogs.put("d", "catalog d", 600, group="d", anchor=True)  # evicts the two oldest: b and c
    assert searchers.get("hot") == "searcher"
    assert (catalogs.get("b"), catalogs.get("c")) == (None, None)


def test_evicting_logs_the_cache_figures_as_structured_fields(caplog: pytest.LogCaptureFixture) -> None:
    budget = MemoryBudget(100)
    shelf = budget.shelf("catalog")
    with caplog.at_level(logging.INFO, logger="foldgate.model.lru"):
        for i in range(5):
            shelf.put(i, i, 60)
    records = [r for r in caplog.records if hasattr(r, "cache")]
    assert len(records) == 1  # a summary at most once a minute, not a line per eviction
    fields = records[0].cache
    assert fields["budget_bytes"] == 100
    assert fields["evictions"] == fields["evicted_since_last"] == 1
    assert fields["bytes"] <= 100
