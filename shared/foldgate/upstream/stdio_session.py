"""A stdio upstream (local only): one process with an SDK session held open by a background task."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from foldgate.config.tenant import ServerConfig
from foldgate.errors import UpstreamError
from foldgate.upstream.call_errors import describe
from foldgate.upstream.changes import ChangeListener, change_handler, listen_for_changes

__all__ = ["StdioSession"]


class StdioSession:
    """One stdio upstream process with a session held open by a background task."""

    def __init__(self, server: ServerConfig, on_change: ChangeListener | None = None) -> None:
        self.server = server
        self.on_change = on_change
        self.broken = False
        self.loop = asyncio.get_running_loop()  # its process pipes and task live on this loop
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._session: Any = None
        self._error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        # The SDK (~0.4 s to import) loads on first use, not at init.
        from mcp import Client, StdioServerParameters

        command = self.server.command or []
        params = StdioServerParameters(command=command[0], args=command[1:], env=self.server.env or None)
        options: dict[str, Any] = {}
        if self.on_change is not None:
            options["message_handler"] = change_handler(self.server.name, self.on_change)
        try:
            async with Client(
                params, cache=None, read_timeout_seconds=self.server.timeout_s, **options
            ) as client:
                self._session = client.session
                self._ready.set()
                if self.on_change is not None and client.session.discover_result is not None:
                    await listen_for_changes(client, self.server.name, self.on_change, self._stop)
                await self._stop.wait()
        except BaseException as exc:  # the process died or never started: report it to waiters
            self._error = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            self.broken = True
            self._ready.set()

    async def get(self) -> Any:
        """The open session (the process starts on first use); UpstreamError when it could not start."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        await self._ready.wait()
        if self._session is None or self.broken:
            why = describe(self._error or RuntimeError("exited"))
            raise UpstreamError(f"{self.server.name}: stdio server did not start: {why}")
        return self._session

    async def close(self) -> None:
        """Stop the session and its process (waits up to 5 s)."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(self._task, 5)
