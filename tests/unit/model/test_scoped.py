"""A scoped context variable: set for the block and bound by ``as``, the value before back after it
however the block ends, nested scopes unwinding in order, and a task started inside seeing the value."""

from __future__ import annotations

import asyncio
from contextvars import ContextVar

import pytest

from foldgate.model.scoped import scoped

_VAR: ContextVar[str | None] = ContextVar("test_scoped", default=None)


def test_the_value_is_set_for_the_block_and_bound_by_as() -> None:
    with scoped(_VAR, "a") as value:
        assert (value, _VAR.get()) == ("a", "a")
    assert _VAR.get() is None


def _fail_inside(value: str) -> None:
    with scoped(_VAR, value):
        assert _VAR.get() == value
        raise RuntimeError("boom")


def test_nested_scopes_unwind_in_order_even_when_the_block_raises() -> None:
    with scoped(_VAR, "outer"):
        with pytest.raises(RuntimeError):
            _fail_inside("inner")
        assert _VAR.get() == "outer"
    assert _VAR.get() is None


async def test_a_task_started_inside_sees_the_value() -> None:
    async def read() -> str | None:
        return _VAR.get()

    with scoped(_VAR, "request"):
        seen = await asyncio.create_task(read())
    assert seen == "request"
