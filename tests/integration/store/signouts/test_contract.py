"""The SignOutStore contract, run over SQLite and DynamoDB (moto_server) alike: a signed-out session is
refused by every store on the same file or table until its expiry, and never earlier than recorded."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.store.signouts.base import SignOutStore
from foldgate.store.signouts.dynamodb import DynamoSignOutStore
from foldgate.store.signouts.sqlite import SqliteSignOutStore
from tests.integration.store.backends import BACKENDS, open_backend

SID = "0123456789abcdef0123456789abcdef"
OTHER = "fedcba9876543210fedcba9876543210"


@pytest.fixture(params=BACKENDS)
def stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[SignOutStore, SignOutStore]]:
    """Two stores on one backend's file or table: two instances of the gateway."""
    for first in open_backend(request, tmp_path, SqliteSignOutStore, DynamoSignOutStore):
        second = (
            SqliteSignOutStore(tmp_path / "store.sqlite3")
            if isinstance(first, SqliteSignOutStore)
            else DynamoSignOutStore(request.getfixturevalue("dynamo_table"))
        )
        try:
            yield first, second
        finally:
            second.close()


def test_a_sign_out_holds_on_every_instance_and_for_that_session_only(
    stores: tuple[SignOutStore, SignOutStore],
) -> None:
    here, there = stores
    assert not here.signed_out(SID)
    here.sign_out(SID, time.time() + 3600)
    assert here.signed_out(SID)
    assert there.signed_out(SID)
    assert not there.signed_out(OTHER)


def test_a_record_past_its_expiry_no_longer_counts(stores: tuple[SignOutStore, SignOutStore]) -> None:
    here, there = stores
    here.sign_out(SID, time.time() - 1)
    assert not there.signed_out(SID)


def test_signing_out_again_never_moves_the_expiry_earlier(stores: tuple[SignOutStore, SignOutStore]) -> None:
    here, there = stores
    here.sign_out(SID, time.time() + 3600)
    there.sign_out(SID, time.time() - 1)
    here.sign_out(SID, time.time() + 3600)
    assert here.signed_out(SID)
    assert there.signed_out(SID)
