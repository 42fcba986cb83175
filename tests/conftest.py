"""Shared test fixtures: where the team kit (../shared beside the checkout) is, if present; the one
server-everything upstream every test that only calls it shares (per session, per xdist worker); and a
test fails when asyncio reports a task exception nobody read."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KIT = REPO.parent / "shared"
CORPORA = KIT / "corpora"


def corpus_path(*parts: str) -> Path:
    """A path inside ../shared/corpora; skips the test with a reason when the kit is absent."""
    path = CORPORA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the team kit ../shared is not beside this checkout")
    return path


class _UnreadTaskErrors(logging.Handler):
    """Collects asyncio's "Task exception was never retrieved" (and "Future exception ...") lines."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "exception was never retrieved" in message:
            exc = record.exc_info[1] if record.exc_info else None
            self.seen.append(f"{message} ({type(exc).__name__}: {exc})" if exc is not None else message)


@pytest.fixture(autouse=True)
def no_unread_task_exceptions() -> Iterator[None]:
    """Fails the test during which asyncio reports a background task's exception that nobody read:
    every task's failure must be awaited or read (a done callback), never left for the loop to log."""
    handler = _UnreadTaskErrors()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        yield
    finally:
        logger.removeHandler(handler)
    if handler.seen:
        pytest.fail("asyncio: " + "; ".join(handler.seen), pytrace=False)


@pytest.fixture(scope="session")
def everything_url() -> Iterator[str]:
    """npm server-everything (tools with outputSchema, resources, templates, prompts): its /mcp URL,
    started once per session (each test speaks to it over its own MCP session)."""
    # tests.procs needs the demo fleet's paths; loaded only by the tests that ask for this server.
    from tests.procs import everything_server

    with everything_server() as url:
        yield url
