"""Fixtures for the sandbox tests: a real worker process per test and a fake tool caller."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from foldgate.code.sandbox import Sandbox


@dataclass
class FakeTools:
    """An async ToolCaller over a tiny fake GitHub; records every call it receives."""

    received: list[tuple[str, str, Any]] = field(default_factory=list)
    delay_s: float = 0.0
    in_flight: int = 0
    max_in_flight: int = 0

    async def __call__(self, server: str, tool: str, args: Any) -> tuple[bool, Any]:
        self.received.append((server, tool, args))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            return self.answer(server, tool, args)
        finally:
            self.in_flight -= 1

    @staticmethod
    def answer(server: str, tool: str, args: Any) -> tuple[bool, Any]:
        if (server, tool) == ("github", "list_issues"):
            return True, {"issues": [{"number": n, "title": f"issue {n}"} for n in range(1, 7)]}
        if (server, tool) == ("github", "get_issue"):
            n = args["number"]
            return True, {"number": n, "state": "open" if n % 3 else "closed", "body": "x" * 10}
        if tool == "echo":
            return True, {"echo": args}
        if tool == "sleep":
            return True, {}
        return False, {"error": f"unknown tool: {server}.{tool}", "error_type": "not_found"}


@pytest.fixture
def tools() -> FakeTools:
    return FakeTools()


@pytest.fixture
async def sandbox() -> AsyncIterator[Sandbox]:
    async with Sandbox() as sb:
        yield sb
