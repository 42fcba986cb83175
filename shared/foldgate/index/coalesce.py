"""Coalesced change triggers: many "this server changed" signals, few reindexes.

Upstreams announce changes in bursts (a deploy touching many tools, a webhook retried, a stdio server
sending ``list_changed`` per tool). Per key (tenant, server):

* the first signal schedules one run ``delay_s`` later, and signals arriving before it starts fold in;
* a signal arriving while the run is in progress marks the key dirty: exactly one more run follows,
  so a change made after the upstream was listed is never missed;
* one key's runs never overlap, different keys run independently.

So a burst of 100 pings within ``delay_s`` costs one reindex, and a steady stream costs at most one
run at a time plus one queued.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

__all__ = ["Coalescer", "ServerTrigger"]

log = logging.getLogger(__name__)

# Ask for a reindex of one server of a tenant (returns once the request is recorded or sent).
ServerTrigger = Callable[[str, str], Awaitable[None]]


class Coalescer:
    """Runs ``run(tenant, server)`` for signals, coalesced per key (see the module doc)."""

    def __init__(self, run: Callable[[str, str], Awaitable[object]], *, delay_s: float = 1.0) -> None:
        self._run = run
        self.delay_s = delay_s
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._dirty: set[tuple[str, str]] = set()
        self.runs = 0  # runs started over the coalescer's life (observability and tests)

    async def signal(self, tenant: str, server: str) -> None:
        """Record a change of ``server`` (a ``ServerTrigger``); never waits for the reindex."""
        self.request(tenant, server)

    def request(self, tenant: str, server: str) -> None:
        """Synchronous form of ``signal`` for callers that cannot await (notification handlers)."""
        key = (tenant, server)
        if key in self._tasks:
            self._dirty.add(key)
            return
        task = asyncio.get_running_loop().create_task(self._drain(key), name=f"reindex-{tenant}-{server}")
        self._tasks[key] = task

    async def _drain(self, key: tuple[str, str]) -> None:
        try:
            await asyncio.sleep(self.delay_s)
            while True:
                # Signals from here on arrive during the run, and so mean "list again afterwards".
                self._dirty.discard(key)
                self.runs += 1
                try:
                    await self._run(*key)
                except Exception:  # a failed run must not stop later signals from being served
                    log.exception("reindex of %s/%s failed", *key)
                if key not in self._dirty:
                    return
        finally:
            self._tasks.pop(key, None)
            self._dirty.discard(key)

    def pending(self) -> int:
        """Keys with a run scheduled or in progress."""
        return len(self._tasks)

    async def aclose(self) -> None:
        """Cancel scheduled and running reindexes (process shutdown)."""
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        # A task cancelled before its first step never ran its own clean-up.
        self._tasks.clear()
        self._dirty.clear()
