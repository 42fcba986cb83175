"""The QuotaStore contract, run over SQLite and DynamoDB (moto_server) alike: two stores on one file or
table (two instances) share each key's bucket; a take grants what was asked while the bucket holds it,
what it holds when less (a slice shrinks at the quota's end), nothing when it is empty, and the bucket
refills at the quota's rate."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.store.quotas.base import Bucket, QuotaStore
from foldgate.store.quotas.dynamodb import DynamoQuotaStore
from foldgate.store.quotas.sqlite import SqliteQuotaStore
from tests.integration.store.backends import BACKENDS, open_backend

NOW = 1_800_000_000.0
# 120 a minute: a token every 0.5 s, a bucket of six (three seconds' worth).
BUCKET = Bucket(120)


@pytest.fixture(params=BACKENDS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[QuotaStore, QuotaStore]]:
    """Two stores on one backend's file or table: two instances of the gateway."""
    for first in open_backend(request, tmp_path, SqliteQuotaStore, DynamoQuotaStore):
        second = (
            SqliteQuotaStore(tmp_path / "store.sqlite3")
            if isinstance(first, SqliteQuotaStore)
            else DynamoQuotaStore(request.getfixturevalue("dynamo_table"))
        )
        try:
            yield first, second
        finally:
            second.close()


def test_the_bucket_is_three_seconds_of_the_quota_and_at_least_one() -> None:
    assert (BUCKET.capacity, BUCKET.interval) == (6, 0.5)
    assert Bucket(6000).capacity == 300
    assert Bucket(3).capacity == 1


def test_instances_share_one_bucket_and_a_take_shrinks_to_what_is_left(
    stores: tuple[QuotaStore, QuotaStore],
) -> None:
    here, there = stores
    assert here.take("t\x1ftenant", 4, BUCKET, NOW).granted == 4
    short = there.take("t\x1ftenant", 4, BUCKET, NOW)
    assert short.granted == 2  # what the shared bucket still held
    empty = here.take("t\x1ftenant", 1, BUCKET, NOW)
    assert empty.granted == 0
    # The answer says when the next token frees: one interval after now.
    assert BUCKET.free_at(empty.tat) == pytest.approx(NOW + 0.5)


def test_the_bucket_refills_at_the_quotas_rate_up_to_its_capacity(
    stores: tuple[QuotaStore, QuotaStore],
) -> None:
    here, there = stores
    assert here.take("k", 6, BUCKET, NOW).granted == 6
    assert there.take("k", 6, BUCKET, NOW + 1.0).granted == 2  # two tokens in one second
    assert here.take("k", 6, BUCKET, NOW + 1.2).granted == 0
    assert there.take("k", 6, BUCKET, NOW + 60).granted == 6  # full again, never more


def test_keys_are_independent(stores: tuple[QuotaStore, QuotaStore]) -> None:
    here, there = stores
    assert here.take("t\x1ftoken\x1fa", 6, BUCKET, NOW).granted == 6
    assert there.take("t\x1ftoken\x1fa", 1, BUCKET, NOW).granted == 0
    assert there.take("t\x1ftoken\x1fb", 6, BUCKET, NOW).granted == 6


def test_a_take_never_asks_more_than_the_bucket_holds(stores: tuple[QuotaStore, QuotaStore]) -> None:
    here, _ = stores
    assert here.take("k", 1_000, BUCKET, NOW).granted == 6


def test_a_take_grants_nothing_below_its_least_and_leaves_the_bucket_as_it_was(
    stores: tuple[QuotaStore, QuotaStore],
) -> None:
    here, there = stores
    assert here.take("k", 4, BUCKET, NOW).granted == 4
    short = there.take("k", 4, BUCKET, NOW, least=3)
    assert short.granted == 0
    assert short.tat == NOW + 2.0  # two tokens left, untouched
    assert there.take("k", 4, BUCKET, NOW, least=2).granted == 2
