"""For whom a request goes upstream: the tenant and the subject whose upstream grant it uses.

A context variable rather than an argument: the call path, the code surface, prompts/resources and the
indexer all reach the upstream client through several layers that know nothing of credentials; the
entry point of each (a request, an index job) sets it once, and asyncio copies it into every task it
starts. Nothing set means no OAuth identity: an OAuth upstream then refuses rather than guessing.

The edge also notes the raw inbound OAuth access token a request was authenticated with
(:func:`presenting`): the token-exchange auth kinds hand it to the person's IdP as the subject token.
:func:`calling_as` binds it to the caller only for a person's own subject (never the shared one), so a
token is only ever exchanged for the person it identifies. It is never logged, compared or printed.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Final

from foldgate.model.scoped import scoped

__all__ = ["SHARED_SUBJECT", "UpstreamCaller", "calling_as", "current_caller", "presenting"]

# The subject of the tenant's shared connection (the grant store's SHARED).
SHARED_SUBJECT: Final = "*"


@dataclass(frozen=True, slots=True)
class UpstreamCaller:
    """The tenant, and the end user's subject (``*``: the shared connection, e.g. the indexer)."""

    tenant: str
    subject: str = SHARED_SUBJECT
    # The person's inbound OAuth access token of this request (token-exchange kinds); None for the
    # shared subject, an agent token or no request. Out of repr and equality: it is a credential.
    inbound_token: str | None = field(default=None, repr=False, compare=False)


_CALLER: ContextVar[UpstreamCaller | None] = ContextVar("foldgate_upstream_caller", default=None)
_INBOUND: ContextVar[str | None] = ContextVar("foldgate_inbound_token", default=None)


def presenting(token: str | None) -> None:
    """The running request was authenticated with inbound OAuth access ``token`` (None: with anything
    else). Set by the edge for the rest of the request (each request runs in its own task context)."""
    _INBOUND.set(token)


def current_caller() -> UpstreamCaller | None:
    """Who the running request or job calls upstreams for, if anyone said."""
    return _CALLER.get()


def calling_as(tenant: str, subject: str = SHARED_SUBJECT) -> scoped[UpstreamCaller]:
    """Within the block, upstream requests are made for ``tenant`` and ``subject``."""
    inbound = _INBOUND.get() if subject != SHARED_SUBJECT else None
    return scoped(_CALLER, UpstreamCaller(tenant, subject, inbound))
