"""How the admin API gets a tenant reindexed: inline where the indexer lives in the same process
(local serve), or by an asynchronous invoke of the IndexerFunction in the cloud."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from foldgate.config.source import ConfigSource
from foldgate.errors import FoldgateError

if TYPE_CHECKING:
    # Only a type here: the admin API imports this module and must not pull the indexer in.
    from foldgate.index.indexer import Indexer

__all__ = ["Reindexer", "lambda_reindexer", "local_reindexer"]

# Reindex one tenant now (or ask for it) and say what happened, as the admin API reports it.
Reindexer = Callable[[str], Awaitable[dict[str, Any]]]


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
        }

    return run


def lambda_reindexer(function_name: str, *, client: Any | None = None) -> Reindexer:
    """Ask the IndexerFunction (async invoke, the same event as ``events/reindex_invoke.json``)."""
    holder: list[Any] = [client] if client is not None else []

    async def run(tenant: str) -> dict[str, Any]:
        # boto3 loads only when the cloud reindexer is first used.
        import anyio

        if not holder:
            import boto3  # lazily: only the admin path of the MCP function invokes the indexer

            holder.append(boto3.client("lambda"))
        payload = json.dumps({"action": "reindex", "tenant": tenant}).encode()

        def invoke() -> Any:
            return holder[0].invoke(FunctionName=function_name, InvocationType="Event", Payload=payload)

        try:
            await anyio.to_thread.run_sync(invoke)
        except Exception as exc:  # botocore's tree; the operator gets the reason, not a 500
            return {"reindex": "failed", "error": f"cannot invoke the indexer: {type(exc).__name__}"}
        return {"reindex": "requested"}

    return run
