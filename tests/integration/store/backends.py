"""The store contract tests' one fixture shape: the same tests on SQLite (a file under the test's
tmp_path) and on DynamoDB (the real moto_server table), each store closed afterwards."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final, Protocol, TypeVar

import pytest

# Fixture params: one run of every contract test per backend.
BACKENDS: Final = ["sqlite", "dynamodb"]


class _Closable(Protocol):
    def close(self) -> None: ...


S = TypeVar("S", bound=_Closable)


def open_backend(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    sqlite: Callable[[Path], S],
    dynamodb: Callable[[str], S],
) -> Iterator[S]:
    """The store on the backend named by the fixture's param, closed when the test is done."""
    if request.param == "sqlite":
        store = sqlite(tmp_path / "store.sqlite3")
    else:
        store = dynamodb(request.getfixturevalue("dynamo_table"))
    try:
        yield store
    finally:
        store.close()
