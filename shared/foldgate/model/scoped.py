"""A context variable set for the length of a block: the request path's scopes (deadline, caller,
trace, relay, task link, consent links) without a generator each.

``contextlib.contextmanager`` makes a generator, a wrapper object and two generator steps per block
(~1.5 us); a proxied call enters some six such scopes. :class:`scoped` sets the variable on entry and
resets it on exit, however the block ends, like the generator it replaces (~0.4 us).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Any, Generic, TypeVar

__all__ = ["scoped"]

T = TypeVar("T")


class scoped(Generic[T]):
    """Within the block, ``var`` holds ``value`` (what ``with ... as`` binds); the value before is back
    after it."""

    __slots__ = ("_token", "_value", "_var")

    def __init__(self, var: ContextVar[T] | ContextVar[T | None], value: T) -> None:
        # A variable that may also hold None (nothing set) takes a value of its type all the same.
        self._var: ContextVar[Any] = var
        self._value = value

    def __enter__(self) -> T:
        self._token: Token[Any] = self._var.set(self._value)
        return self._value

    def __exit__(self, *exc: object) -> None:
        self._var.reset(self._token)
