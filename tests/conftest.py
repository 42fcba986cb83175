"""Shared test fixtures: where the team kit (../shared beside the checkout) is, if present, and the one
server-everything upstream every test that only calls it shares (per session, per xdist worker)."""

from __future__ import annotations

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


@pytest.fixture(scope="session")
def everything_url() -> Iterator[str]:
    """npm server-everything (tools with outputSchema, resources, templates, prompts): its /mcp URL,
    started once per session (each test speaks to it over its own MCP session)."""
    # tests.procs needs the demo fleet's paths; loaded only by the tests that ask for this server.
    from tests.procs import everything_server

    with everything_server() as url:
        yield url
