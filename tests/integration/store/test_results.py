"""Result stores behind read_cache, SQLite and DynamoDB (moto_server) alike: round trip, expiry,
results bigger than one DynamoDB item."""

from __future__ import annotations

import random
import string
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.store.results.base import CachedResult, ResultStore
from foldgate.store.results.dynamodb import DynamoResultStore
from foldgate.store.results.sqlite import SqliteResultStore
from tests.integration.store.backends import BACKENDS, open_backend


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ResultStore]:
    yield from open_backend(request, tmp_path, SqliteResultStore, DynamoResultStore)


def test_round_trip_and_unknown_keys(store: ResultStore) -> None:
    store.put("k1", CachedResult("acme", "héllo " * 1000, time.time() + 60))
    got = store.get("k1")
    assert got is not None
    assert got.stamp == "acme"
    assert got.text == "héllo " * 1000
    assert store.get("k2") is None


def test_expired_entries_are_gone(store: ResultStore) -> None:
    store.put("old", CachedResult("acme", "text", time.time() - 1))
    assert store.get("old") is None


def test_a_result_bigger_than_a_dynamodb_item(store: ResultStore) -> None:
    rng = random.Random(3)
    text = "".join(rng.choices(string.ascii_letters + string.digits, k=1_200_000))  # ~900 KB compressed
    store.put("big", CachedResult("acme", text, time.time() + 60))
    got = store.get("big")
    assert got is not None
    assert got.text == text
