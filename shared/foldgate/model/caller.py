"""For whom a request goes upstream: the tenant and the subject whose upstream grant it uses.

A context variable rather than an argument: the call path, the code surface, prompts/resources and the
indexer all reach the upstream client through several layers that know nothing of credentials; the
entry point of each (a request, an index job) sets it once, and asyncio copies it into every task it
starts. Nothing set means no OAuth identity: an OAuth upstream then refuses rather than guessing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Final

__all__ = ["SHARED_SUBJECT", "UpstreamCaller", "calling_as", "current_caller"]

# The subject of the tenant's shared connection (the grant store's SHARED).
SHARED_SUBJECT: Final = "*"


@dataclass(frozen=True, slots=True)
class UpstreamCaller:
    """The tenant, and the end user's subject (``*``: the shared connection, e.g. the indexer)."""

    tenant: str
    subject: str = SHARED_SUBJECT


_CALLER: ContextVar[UpstreamCaller | None] = ContextVar("foldgate_upstream_caller", default=None)


def current_caller() -> UpstreamCaller | None:
    """Who the running request or job calls upstreams for, if anyone said."""
    return _CALLER.get()


@contextlib.contextmanager
def calling_as(tenant: str, subject: str = SHARED_SUBJECT) -> Iterator[UpstreamCaller]:
    """Within the block, upstream requests are made for ``tenant`` and ``subject``."""
    caller = UpstreamCaller(tenant, subject)
    token = _CALLER.set(caller)
    try:
        yield caller
    finally:
        _CALLER.reset(token)
