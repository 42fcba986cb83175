"""Local/embedded mode: one process = the HTTP app + the indexer on a timer + SQLite + a config file."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from fastapi import FastAPI
from starlette.types import ASGIApp

from foldgate.app.wiring import (
    activity_arguments_key,
    connect_link_secret,
    lazy_embedder,
    open_access,
    open_activity,
    open_activity_store,
    open_approvals,
    open_embedder,
    open_hook_secrets,
    open_memory,
    open_results,
    open_sandbox,
    open_signouts,
    open_tracing,
    open_upstream,
    open_upstream_oauth,
    operator_login_limit,
    optional_secret,
)
from foldgate.app.wiring_enrichment import open_enrichment
from foldgate.app.wiring_instance import instance_reader
from foldgate.app.wiring_tasks import open_tasks
from foldgate.auth.oauth.setup import tenant_oauth_configs
from foldgate.auth.secrets import operator_key_location
from foldgate.config.settings import Settings
from foldgate.config.source import ConfigSource, FileConfigSource
from foldgate.edge.admin import admin_router
from foldgate.edge.app import create_app, mcp_first
from foldgate.edge.connect import auth_states, console_connector, oauth_client_router
from foldgate.edge.console.routes import ConsoleDeps, console_router
from foldgate.edge.hooks import hooks_router
from foldgate.edge.metrics import metrics_router
from foldgate.errors import FoldgateError, MissingExtraError
from foldgate.index.coalesce import Coalescer
from foldgate.index.indexer import Indexer, IndexReport
from foldgate.index.triggers import local_reindexer, local_server_reindexer
from foldgate.serve.activity_recorder import BufferedRecorder
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.telemetry.instance import InstanceCollector
from foldgate.telemetry.recorders import Recorders
from foldgate.telemetry.tracing import flush as flush_spans

if TYPE_CHECKING:
    from foldgate.telemetry.prometheus import PrometheusRecorder

__all__ = ["LocalGateway", "build_local", "open_metrics"]

log = logging.getLogger(__name__)

# GET /metrics without prometheus-client: said once at start-up and by the route, never a traceback.
METRICS_MISSING = MissingExtraError("GET /metrics", "metrics", "prometheus-client").message


def open_metrics() -> PrometheusRecorder | None:
    """The call-metrics recorder, or None (logged once) when the ``metrics`` extra is not installed."""
    try:
        # prometheus-client is an optional extra: the gateway serves without it, /metrics says what to add.
        from foldgate.telemetry.prometheus import PrometheusRecorder
    except ImportError:
        log.warning(METRICS_MISSING)
        return None
    return PrometheusRecorder()


@dataclass
class LocalGateway:
    """The wired local gateway; ``app`` is an ASGI app whose lifespan also runs the indexer loop."""

    app: FastAPI
    gateway: Gateway
    indexer: Indexer
    configs: ConfigSource
    store: SqliteStore
    interval_s: float
    # Change triggers (signed webhooks, upstream list_changed) land here: one reindex per burst.
    changes: Coalescer | None = None
    indexed_once: bool = False
    # Call metrics, served at GET /metrics behind the operator credential.
    metrics: PrometheusRecorder | None = None
    # Run once after the first index run (``foldgate serve``: ``foldgate.app.heap.settle_heap``).
    after_first_index: Callable[[], object] | None = None

    @functools.cached_property
    def asgi(self) -> ASGIApp:
        """What the server runs: ``app`` with its MCP endpoints answered first (see
        :func:`foldgate.edge.app.mcp_first`)."""
        return mcp_first(self.app)

    async def index_all(self) -> list[IndexReport]:
        """Index every configured tenant once."""
        reports = []
        for tenant in self.configs.tenants():
            report = await self.indexer.index_tenant(tenant, self.configs.get(tenant))
            status = "new version " + str(report.version) if report.changed else "unchanged"
            failed = [str(s["error"]) for s in report.servers.values() if not s["healthy"]]
            log.info(
                "indexed %s: %d tools, %s%s",
                tenant,
                report.tools,
                status,
                f"; failed {failed}" if failed else "",
            )
            reports.append(report)
        self.indexed_once = True
        return reports

    async def _loop(self) -> None:
        while True:
            try:
                await self.index_all()
            except Exception:  # the loop must survive anything one run throws
                log.exception("index run failed")
            if self.after_first_index is not None:
                settle, self.after_first_index = self.after_first_index, None
                settle()
            await asyncio.sleep(self.interval_s)

    def upstream_changed(self, server: str) -> None:
        """An upstream session announced ``list_changed``: reindex that server in every tenant using it.

        Stdio sessions are keyed by server name alone, so every tenant naming that server is asked.
        """
        if self.changes is None:
            return
        for tenant in self.configs.tenants():
            try:
                found = self.configs.get(tenant).server(server)
            except FoldgateError:
                continue
            if found is not None and found.enabled:
                self.changes.request(tenant, server)

    def ready(self) -> bool:
        """True once every tenant has a current catalog."""
        return self.indexed_once and all(self.store.current_version(t) for t in self.configs.tenants())


def build_local(
    configs: ConfigSource,
    settings: Settings,
    *,
    interval_s: float = 300.0,
    allowed_hosts: list[str] | None = None,
    change_delay_s: float = 1.0,
) -> LocalGateway:
    """Wire store, upstream client, indexer, gateway and app for one process.

    ``change_delay_s`` is how long a change trigger waits for more of its burst before reindexing.
    """
    store = SqliteStore(settings.sqlite_path)
    open_tracing(settings)
    holder: list[LocalGateway] = []
    oauth = open_upstream_oauth(settings)
    upstream = open_upstream(
        settings,
        oauth,
        allow_stdio=True,
        on_change=lambda server: holder[0].upstream_changed(server) if holder else None,
    )
    approvals = open_approvals(settings)
    indexer = Indexer(
        store,
        upstream,
        approvals=approvals,
        embedder=open_embedder(settings),
        enrichment=open_enrichment(settings),
    )
    results = open_results(settings)
    gateway = Gateway(
        store,
        configs,
        upstream,
        catalog_ttl=1.0,
        results=results,
        # Durable tasks: a long call continues in this process, its record in the SQLite store.
        tasks=open_tasks(settings, results),
        embedder=lazy_embedder(settings),
        hybrid_weight=settings.hybrid_weight,
        sandbox=open_sandbox(settings),
        arguments_key=functools.cache(lambda: activity_arguments_key(settings)),
        memory=open_memory(settings),
    )
    # One recorder for the process: closed (what is buffered written) when the app shuts down.
    activity = open_activity_store(settings)
    recorder = open_activity(settings, configs, store=activity)
    if oauth is not None:
        oauth.outcomes.recorder = recorder  # machine grants obtained or refused: audit events
    operator = optional_secret(settings, "operator")
    reindex = local_reindexer(indexer, configs, published=gateway.invalidate)
    # One budget of wrong operator keys for the admin API and the console's sign-in: one key.
    operator_limit = operator_login_limit(settings)
    admin = admin_router(
        gateway,
        operator_secret=operator,
        approvals=approvals,
        reindex=reindex,
        oauth=oauth,
        operator_limit=operator_limit,
        activity=activity,
    )
    access = open_access(settings, configs)
    # The console shares the agents' token authority: a revocation there is refused here at once.
    console = console_router(
        ConsoleDeps(
            gateway,
            operator_secret=operator,
            approvals=approvals,
            reindex=reindex,
            tokens=access.authority,
            connector=console_connector(gateway, oauth) if oauth is not None else None,
            auth_states=lambda tenant: auth_states(oauth, gateway, tenant, activity),
            config_file=str(configs.path) if isinstance(configs, FileConfigSource) else None,
            operator_key_at=operator_key_location(settings),
            login_limit=operator_limit,
            signouts=open_signouts(settings),
            activity=activity,
            public_url=settings.public_url,
            allow_private_upstreams=settings.allow_private_upstreams,
        )
    )
    app = create_app(
        gateway,
        access=access,
        admin=admin,
        console=console,
        allowed_hosts=allowed_hosts,
        max_body_bytes=settings.max_body_bytes,
        ready=lambda: bool(holder) and holder[0].ready(),
        recorder=recorder,
    )
    changes = Coalescer(
        local_server_reindexer(indexer, configs, published=gateway.invalidate), delay_s=change_delay_s
    )
    app.include_router(hooks_router(open_hook_secrets(settings, configs), changes.signal))
    # Call metrics: the activity recorder hands them every event (foldgate.telemetry.recorders.Recorders).
    metrics = open_metrics()
    app.state.metrics = metrics
    gateway.recorder = Recorders(recorder, metrics) if metrics is not None else Recorders(recorder)
    if metrics is not None:
        # The instance's cache, quota leasing and dropped events, read at scrape time.
        metrics.registry.register(InstanceCollector(instance_reader(gateway, access.quotas)))
    app.include_router(
        metrics_router(
            metrics.render if metrics is not None else None,
            operator_secret=operator,
            operator_limit=operator_limit,
            unavailable=METRICS_MISSING,
        )
    )
    if oauth is not None:
        issuers = tenant_oauth_configs(settings, configs)
        app.include_router(oauth_client_router(gateway, oauth, connect_link_secret(settings), issuers))
    local = LocalGateway(app, gateway, indexer, configs, store, interval_s, changes, metrics=metrics)
    holder.append(local)
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def lifespan(a: FastAPI) -> AsyncIterator[None]:
        async with inner(a):
            task = asyncio.get_running_loop().create_task(local._loop())
            try:
                yield
            finally:
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
                await changes.aclose()
                await upstream.aclose()
                await gateway.aclose()
                if isinstance(recorder, BufferedRecorder):
                    # Off the loop: writing what is left may take a store round trip or two.
                    await asyncio.to_thread(recorder.close)
                if activity is not None:
                    activity.close()
                flush_spans()  # spans still in the exporter's batch (a no-op with tracing off)

    app.router.lifespan_context = lifespan
    return local
