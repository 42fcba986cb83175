"""One indexer run: which tenants an event asks for, and indexing them within a deadline.

Five triggers reach the IndexerFunction: the EventBridge schedule (every tenant), a Parameter Store
change under ``{prefix}/tenants/{tenant}/`` (that tenant only, config re-read bypassing caches), a
direct or async invoke ``{"action": "reindex", "tenant": "..."}`` (the admin API's reindex), the same
with ``"server"`` (a signed upstream webhook: that server only, see ``Indexer.index_server``) and the
freshness schedule's ``{"action": "freshness"}`` (list everything, reindex only changed servers, see
:mod:`foldgate.index.freshness`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from foldgate.config.limits import deadline_findings
from foldgate.config.source import ConfigSource
from foldgate.config.ssm import tenant_of_parameter
from foldgate.config.tenant import TenantConfig
from foldgate.errors import ConfigError, FoldgateError, InvalidRequestError, NotFoundError
from foldgate.index.freshness import FreshnessCheck
from foldgate.index.indexer import Indexer, IndexReport
from foldgate.model.deadline import answering_by
from foldgate.model.naming import MAX_SERVER_NAME, SERVER_NAME_RE

__all__ = ["IndexJob", "IndexRequest", "JobResult", "parse_index_event"]

log = logging.getLogger(__name__)

# Time kept back from the Lambda deadline to publish and report after the upstreams answered.
_PUBLISH_MARGIN_S = 10.0
_MIN_UPSTREAM_S = 1.0


@dataclass(frozen=True)
class IndexRequest:
    """What a trigger asks for: ``tenants`` None means every configured tenant."""

    trigger: str
    tenants: tuple[str, ...] | None
    force_config: bool = False
    # Only these servers of the (single) tenant: an upstream's change trigger.
    servers: tuple[str, ...] | None = None


def parse_index_event(event: Any, *, config_prefix: str) -> IndexRequest:
    """Classify a Lambda event; InvalidRequestError for anything that is not a known trigger."""
    if not isinstance(event, dict):
        raise InvalidRequestError("indexer event must be a JSON object")
    source, detail_type = event.get("source"), event.get("detail-type")
    if source == "aws.events" and detail_type == "Scheduled Event":
        return IndexRequest("schedule", None)
    if source == "aws.ssm" and detail_type == "Parameter Store Change":
        detail = event.get("detail")
        name = detail.get("name") if isinstance(detail, dict) else None
        tenant = tenant_of_parameter(name, config_prefix) if isinstance(name, str) else None
        # A change outside the tenants path is not ours: an empty run, not an error.
        return IndexRequest("config_change", (tenant,) if tenant else (), force_config=True)
    if event.get("action") == "freshness":
        return IndexRequest("freshness", None)
    if event.get("action", "reindex") == "reindex" and "server" in event:
        tenant, server = event.get("tenant"), event.get("server")
        if not (isinstance(tenant, str) and tenant and isinstance(server, str)):
            raise InvalidRequestError("a server reindex needs 'tenant' and 'server' (strings)")
        if not SERVER_NAME_RE.match(server) or len(server) > MAX_SERVER_NAME:
            raise InvalidRequestError("'server' is not a valid server name")
        return IndexRequest("server_change", (tenant,), force_config=True, servers=(server,))
    if event.get("action", "reindex") == "reindex" and ("tenant" in event or "tenants" in event):
        raw = event.get("tenants", [event.get("tenant")])
        if not isinstance(raw, list) or not raw or not all(isinstance(t, str) and t for t in raw):
            raise InvalidRequestError("reindex needs 'tenant' (a string) or 'tenants' (a list of strings)")
        return IndexRequest("invoke", tuple(raw), force_config=True)
    raise InvalidRequestError(
        "unrecognised indexer event: expected a schedule, a Parameter Store change, "
        '{"action": "reindex", "tenant": "..." (, "server": "...")} or {"action": "freshness"}'
    )


@dataclass
class JobResult:
    """Every tenant's outcome of one run."""

    trigger: str
    reports: list[IndexReport] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    # Per tenant, what its config asks that the serving functions cannot honour (indexed all the same).
    findings: dict[str, list[str]] = field(default_factory=dict)

    def to_doc(self) -> dict[str, Any]:
        """JSON-ready summary (the invoke response and the run's log line)."""
        return {
            "trigger": self.trigger,
            "tenants": {
                r.tenant: {
                    "version": r.version,
                    "changed": r.changed,
                    "tools": r.tools,
                    "failed_servers": r.failed_servers,
                    "catalog_bytes": r.catalog_bytes,
                    "duration_s": r.duration_s,
                    "servers": r.servers,
                    "awaiting_approval": r.awaiting_approval,
                    "flagged": r.flagged,
                    "unsafe_patterns": r.unsafe_patterns,
                    "recovered": r.recovered,
                    "error": r.error,
                    "enrichment": r.enrichment,
                }
                for r in self.reports
            },
            "errors": self.errors,
            "config_findings": self.findings,
        }


class IndexJob:
    """Runs index requests against one store and config source, tenants ``concurrency`` at a time."""

    def __init__(
        self,
        indexer: Indexer,
        configs: ConfigSource,
        *,
        concurrency: int = 4,
        serve_timeout_s: float | None = None,
    ) -> None:
        self.indexer = indexer
        self.configs = configs
        self.concurrency = max(1, concurrency)
        # The serving functions' timeout: configs are checked against it (None: not checked, local).
        self.serve_timeout_s = serve_timeout_s
        self.freshness = FreshnessCheck(indexer)

    def _config(self, tenant: str, force: bool) -> TenantConfig:
        return self.configs.get(tenant, force=force)

    @staticmethod
    def _upstreams_by(deadline: float | None) -> float | None:
        """The instant a tenant's upstream work must end so the run finishes inside the Lambda's (at
        least ``_MIN_UPSTREAM_S`` from now), None without a deadline. A bound on the calls, never a
        rewritten config: the config is what the catalog records and fingerprints, so a timeout cut
        short by the hour of the run would publish an unchanged tenant again on every run."""
        if deadline is None:
            return None
        return max(time.monotonic() + _MIN_UPSTREAM_S, deadline - _PUBLISH_MARGIN_S)

    async def _index(
        self, request: IndexRequest, tenant: str, config: TenantConfig
    ) -> IndexReport | str | None:
        """The trigger's run for one tenant: its report, None when a freshness check found nothing to
        do, or why nothing ran."""
        if request.trigger == "freshness":
            return await self.freshness.check(tenant, config)
        if request.servers is None:
            return await self.indexer.index_tenant(tenant, config)
        unknown = [s for s in request.servers if (c := config.server(s)) is None or not c.enabled]
        if unknown:
            return f"no enabled server {unknown[0]!r}"
        return await self.indexer.index_scoped(tenant, config, set(request.servers))

    async def run(self, request: IndexRequest, *, deadline: float | None = None) -> JobResult:
        """Index the requested tenants; one tenant's failure never stops the others."""
        result = JobResult(request.trigger)
        if request.tenants is None:
            try:
                tenants: list[str] = self.configs.tenants()
            except FoldgateError as exc:
                result.errors["*"] = exc.message
                return result
        else:
            tenants = list(dict.fromkeys(request.tenants))
        gate = asyncio.Semaphore(self.concurrency)

        async def one(tenant: str) -> None:
            async with gate:
                try:
                    config = self._config(tenant, request.force_config)
                except (ConfigError, NotFoundError) as exc:
                    # Nothing is published: the tenant's last good catalog keeps serving.
                    result.errors[tenant] = exc.message
                    log.error("tenant %s not indexed: %s", tenant, exc.message)
                    return
                findings = deadline_findings(config, self.serve_timeout_s)
                if findings:
                    result.findings[tenant] = findings
                    log.warning("tenant %s: %s", tenant, "; ".join(findings))
                problem = self.configs.problem(tenant)
                if problem is not None:
                    result.errors[tenant] = f"indexed with the last good config: {problem}"
                # Every upstream keeps its own timeout and also ends by the run's deadline.
                with answering_by(self._upstreams_by(deadline)):
                    report = await self._index(request, tenant, config)
                if isinstance(report, str):
                    result.errors[tenant] = report
                elif report is not None:
                    result.reports.append(report)

        await asyncio.gather(*(one(t) for t in tenants))
        result.reports.sort(key=lambda r: r.tenant)
        return result
