"""The connect links the call path handed out during one request, for the edge to offer as URL-mode
elicitations.

The edge must never take a link from a tool result: an upstream's result is hostile and could mimic
foldgate's consent error with a link of its own (a phishing page dressed as "connect your account").
So the call path records each link it signed itself here, in a holder the edge installs around the
call (:func:`collecting`); the holder is a list the call path appends to, so it survives the tasks
and copied contexts the call may run in.
"""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass

from foldgate.model.scoped import scoped

__all__ = ["ConsentLink", "collecting", "note_consent_link"]


@dataclass(frozen=True, slots=True)
class ConsentLink:
    """A signed per-user connect link the call path answered with."""

    server: str
    url: str


_LINKS: ContextVar[list[ConsentLink] | None] = ContextVar("foldgate_consent_links", default=None)


def collecting() -> scoped[list[ConsentLink]]:
    """Within the block, the call path's connect links are appended to the yielded list."""
    return scoped(_LINKS, [])


def note_consent_link(server: str, url: str) -> None:
    """Record a link the call path signed (a no-op outside :func:`collecting`)."""
    links = _LINKS.get()
    if links is not None:
        links.append(ConsentLink(server, url))
