"""Upstream change notifications: telling a listener that a server's tools, prompts or resources changed.

Two shapes reach a held session (stdio, or a pooled Streamable HTTP one): on a handshake-era session the
upstream sends ``notifications/tools/list_changed`` (and the prompts and resources ones), which the
SDK surfaces through the session's message handler (:func:`change_handler`); on a 2026-07-28 session
they arrive only on a ``subscriptions/listen`` stream the client opens (:func:`listen_for_changes`).
Either way the listener hears the server's name; what to do about it (a coalesced reindex) is the
caller's business.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import anyio

__all__ = ["LIST_CHANGED", "ChangeListener", "change_handler", "listen_for_changes"]

log = logging.getLogger(__name__)

# Told the server's name when an upstream announces that its tools, prompts or resources changed.
ChangeListener = Callable[[str], None]
LIST_CHANGED = frozenset(
    {
        "notifications/tools/list_changed",
        "notifications/prompts/list_changed",
        "notifications/resources/list_changed",
    }
)


def _tell(listener: ChangeListener, server: str) -> None:
    try:
        listener(server)
    except Exception:  # a listener's fault must not break the upstream session or its stream
        log.exception("change listener for %s failed", server)


def change_handler(server: str, listener: ChangeListener) -> Any:
    """An SDK ``message_handler`` telling ``listener`` of the upstream's ``list_changed`` notifications
    (anything else the session surfaces, transport faults included, is left to the session)."""

    async def handle(message: Any) -> None:
        if getattr(message, "method", None) in LIST_CHANGED:
            _tell(listener, server)

    return handle


async def listen_for_changes(
    client: Any,
    name: str,
    on_change: ChangeListener,
    stop: asyncio.Event,
    *,
    announce: bool = True,
    acknowledged: Callable[[], None] | None = None,
) -> None:
    """On a 2026-07-28 session, change notifications arrive only on a ``subscriptions/listen`` stream:
    hold one open (until ``stop``) and tell ``on_change`` of each event. Handshake-era sessions get
    them as plain notifications through the session's message handler instead.

    The stream has no replay, so a change made between the first listing and the acknowledgement would
    be lost: with ``announce``, ``on_change`` is also told once when the stream is acknowledged (list
    again; a reindex that finds nothing new publishes nothing). A stream opened again for the same
    upstream (the session went idle, or was replaced) passes ``announce=False``: re-listing on every
    reconnect is what made short-lived sessions loop, and the schedule's reindex covers the gap.
    ``acknowledged`` is called once the stream is acknowledged (after any announcement)."""
    try:
        async with (
            client.listen(
                tools_list_changed=True, prompts_list_changed=True, resources_list_changed=True
            ) as events,
            anyio.create_task_group() as tg,
        ):

            async def until_stopped() -> None:
                await stop.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(until_stopped)
            if announce:
                _tell(on_change, name)
            if acknowledged is not None:
                acknowledged()
            async for _event in events:
                _tell(on_change, name)
            tg.cancel_scope.cancel()
    except Exception as exc:  # no listen support, or the stream dropped: the schedule still reindexes
        log.info("%s: not listening for tool changes: %s", name, str(exc) or type(exc).__name__)
