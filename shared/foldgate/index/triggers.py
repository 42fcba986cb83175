"""How the admin API gets a tenant reindexed, and a change trigger one server of it: inline where the
indexer lives in the same process (local serve), or by an asynchronous invoke of the IndexerFunction in
the cloud."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from foldgate.config.source import ConfigSource
from foldgate.errors import FoldgateError
from foldgate.model.bounded import bounded

if TYPE_CHECKING:
    # Only a type here: the admin API imports this module and must not pull the indexer in.
    from foldgate.index.indexer import Indexer, IndexReport

__all__ = [
    "Reindexer",
    "failed_servers",
    "lambda_reindexer",
    "lambda_server_trigger",
    "local_reindexer",
    "local_server_reindexer",
]

log = logging.getLogger(__name__)

# Reindex one tenant now (or ask for it) and say what happened, as the admin API reports it.
Reindexer = Callable[[str], Awaitable[dict[str, Any]]]


def failed_servers(report: IndexReport) -> list[dict[str, Any]]:
    """Each server this run could not list, by name: why (bounded: it is the upstream's text), and
    that its last good tools keep serving (how many), for every reindex answer alike."""
    failed = []
    for name, status in sorted(report.servers.items()):
        if status.get("healthy"):
            continue
        kept = int(status.get("tools") or 0)
        serving = f"its last good {kept} tools keep serving" if kept else "it has no earlier tools to serve"
        why = bounded(str(status.get("error") or "no reason given"))
        failed.append({"server": name, "error": why, "kept_tools": kept, "serving": serving})
    return failed


def local_reindexer(
    indexer: Indexer, configs: ConfigSource, *, published: Callable[[str], None] | None = None
) -> Reindexer:
    """Index the tenant now and report what happened; ``published`` hears of every new version."""

    async def run(tenant: str) -> dict[str, Any]:
        try:
            report = await indexer.index_tenant(tenant, configs.get(tenant, force=True))
        except FoldgateError as exc:
            return {"reindex": "failed", "error": exc.message}
        if report.changed and published is not None:
            published(tenant)
        return {
            "reindex": "done",
            "version": report.version,
            "changed": report.changed,
            "tools": report.tools,
            "awaiting_approval": report.awaiting_approval,
            "flagged": report.flagged,
            "unsafe_patterns": report.unsafe_patterns,
            "recovered": report.recovered,
            "error": report.error,
            # A server that failed to list is no run failure (its last good tools serve): named here.
            "failed_servers": failed_servers(report),
        }

    return run


def local_server_reindexer(
    indexer: Indexer, configs: ConfigSource, *, published: Callable[[str], None] | None = None
) -> Callable[[str, str], Awaitable[None]]:
    """Reindex one server of a tenant now (the run behind a local change trigger's coalescer)."""

    async def run(tenant: str, server: str) -> None:
        try:
            report = await indexer.index_server(tenant, configs.get(tenant, force=True), server)
        except FoldgateError as exc:
            log.warning("change trigger for %s/%s not indexed: %s", tenant, server, exc.message)
            return
        outcome = f"new version {report.version}" if report.changed else "unchanged"
        log.info("change trigger %s/%s: %s", tenant, server, report.error or outcome)
        if report.changed and published is not None:
            published(tenant)

    return run


def _invoker(function_name: str, client: Any | None) -> Callable[[dict[str, Any]], Awaitable[str | None]]:
    """An async Event invoke of the IndexerFunction; returns the failure's reason, None when sent."""
    holder: list[Any] = [client] if client is not None else []

    async def invoke(event: dict[str, Any]) -> str | None:
        # boto3 loads only when the cloud reindexer is first used.
        import anyio

        if not holder:
            import boto3  # lazily: only the admin and hook paths of the MCP function invoke the indexer

            holder.append(boto3.client("lambda"))
        payload = json.dumps(event).encode()

        def send() -> Any:
            return holder[0].invoke(FunctionName=function_name, InvocationType="Event", Payload=payload)

        try:
            await anyio.to_thread.run_sync(send)
        except Exception as exc:  # botocore's tree; reported, never a 500
            return f"cannot invoke the indexer: {type(exc).__name__}"
        return None

    return invoke


def lambda_reindexer(function_name: str, *, client: Any | None = None) -> Reindexer:
    """Ask the IndexerFunction (async invoke, the same event as ``events/reindex_invoke.json``)."""
    invoke = _invoker(function_name, client)

    async def run(tenant: str) -> dict[str, Any]:
        error = await invoke({"action": "reindex", "tenant": tenant})
        if error is not None:
            return {"reindex": "failed", "error": error}
        return {"reindex": "requested"}

    return run


def lambda_server_trigger(
    function_name: str,
    *,
    client: Any | None = None,
    window_s: float = 2.0,
    clock: Callable[[], float] = time.monotonic,
    max_keys: int = 10_000,
) -> Callable[[str, str], Awaitable[None]]:
    """Ask the IndexerFunction to reindex one server (``{"action": "reindex", "tenant", "server"}``).

    A Lambda instance is frozen once it answered, so nothing may be left to run later: the invoke is
    sent before the webhook answers, and coalescing is a window instead. At most one invoke per
    (tenant, server) per ``window_s`` on this instance; a ping inside the window is dropped, since the
    invoke just sent lists the server after the ping's change in all but a race the freshness schedule
    bounds. Memory: at most ``max_keys`` windows, oldest dropped first.
    """
    invoke = _invoker(function_name, client)
    last: dict[tuple[str, str], float] = {}

    async def run(tenant: str, server: str) -> None:
        now, key = clock(), (tenant, server)
        sent = last.get(key)
        if sent is not None and now - sent < window_s:
            return
        last.pop(key, None)
        last[key] = now
        while len(last) > max_keys:
            del last[next(iter(last))]
        error = await invoke({"action": "reindex", "tenant": tenant, "server": server})
        if error is not None:
            last.pop(key, None)  # not sent: the next ping may try again at once
            log.error("change trigger for %s/%s: %s", tenant, server, error)

    return run
