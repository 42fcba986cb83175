"""The activity store on each backend, for the contract tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from foldgate.store.activity.base import ActivityStore
from foldgate.store.activity.dynamodb import DynamoActivityStore
from foldgate.store.activity.sqlite import SqliteActivityStore
from tests.integration.store.backends import open_backend

ACTIVITY_BACKENDS: Final = ["sqlite", "dynamodb"]


def open_activity_backend(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ActivityStore]:
    """The store on the backend the fixture's param names, closed afterwards."""
    yield from open_backend(request, tmp_path, SqliteActivityStore, DynamoActivityStore)
