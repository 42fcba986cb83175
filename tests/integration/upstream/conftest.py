"""Fixtures the upstream OAuth integration tests share: the loopback enterprise IdP and AS
(tests/upstreams/enterprise.py) and a SQLite grant store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from foldgate.store.grants.sqlite import SqliteGrantStore
from tests.upstream_oauth import grant_store
from tests.upstreams.enterprise import Enterprise, enterprise


@pytest.fixture
def ent() -> Iterator[Enterprise]:
    """A loopback enterprise: an IdP issuing ID-JAGs, an authorization server and a protected resource."""
    with enterprise() as running:
        yield running


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteGrantStore]:
    """A fresh SQLite grant store."""
    with grant_store(tmp_path) as grants:
        yield grants
