"""The IndexerFunction's body: dependencies built once per instance, one index job per invocation.

Two kinds of invocation: a direct one (a Parameter Store change, the admin API's reindex, an upstream
webhook: one tenant, low latency) and a batch from the index queue (the schedules' fan-out, see
:mod:`foldgate.index.fanout` and :mod:`foldgate.app.indexer_batch`). A run over every tenant is never
made here: the schedules enqueue one message per tenant instead (:mod:`foldgate.app.schedule_lambda`).

Observability is Powertools': structured logs (the package's own loggers included), X-Ray traces and
CloudWatch metrics in embedded metric format (tools indexed, upstream failures, catalog bytes, duration).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from foldgate.app.indexer_batch import build_batch_handler, is_sqs_batch
from foldgate.app.wiring import (
    open_approvals,
    open_configs,
    open_embedder,
    open_store,
    open_upstream,
    open_upstream_oauth,
)
from foldgate.app.wiring_enrichment import open_enrichment
from foldgate.config.settings import Settings
from foldgate.errors import FoldgateError, InvalidRequestError
from foldgate.index.consumer import QueueConsumer
from foldgate.index.indexer import Indexer
from foldgate.index.job import IndexJob, IndexRequest, JobResult, parse_index_event

__all__ = ["build_indexer_handler"]

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]


# CloudWatch metric → the enrichment pass's report field (foldgate.enrich.pipeline.EnrichmentRunReport).
_ENRICHMENT_METRICS = (
    ("ToolsEnriched", "enriched"),
    ("EnrichmentFailures", "failed"),
    ("EnrichmentDeferred", "deferred"),
    ("EnrichmentTokensIn", "tokens_in"),
    ("EnrichmentTokensOut", "tokens_out"),
)


def _record(metrics: Any, result: JobResult, elapsed_ms: float) -> None:
    # Loaded on the first invocation that needs it, keeping the init phase short.
    from aws_lambda_powertools.metrics import MetricUnit

    reports = result.reports
    metrics.add_metric("TenantsIndexed", MetricUnit.Count, len(reports))
    metrics.add_metric("CatalogsPublished", MetricUnit.Count, sum(1 for r in reports if r.changed))
    metrics.add_metric("ToolsIndexed", MetricUnit.Count, sum(r.tools for r in reports))
    metrics.add_metric("UpstreamFailures", MetricUnit.Count, sum(r.failed_servers for r in reports))
    metrics.add_metric("CatalogBytes", MetricUnit.Bytes, sum(r.catalog_bytes for r in reports))
    metrics.add_metric("PublishErrors", MetricUnit.Count, sum(1 for r in reports if r.error))
    metrics.add_metric("ConfigErrors", MetricUnit.Count, len(result.errors))
    metrics.add_metric("ConfigFindings", MetricUnit.Count, sum(len(f) for f in result.findings.values()))
    metrics.add_metric("IndexDuration", MetricUnit.Milliseconds, elapsed_ms)
    enriched = [r.enrichment for r in reports if r.enrichment is not None]
    if enriched:  # only on a stack that enriches: what the model cost this invocation
        for name, key in _ENRICHMENT_METRICS:
            metrics.add_metric(name, MetricUnit.Count, sum(int(e[key]) for e in enriched))


def _failed(metrics: Any) -> None:
    # Loaded on the first invocation that needs it, keeping the init phase short.
    from aws_lambda_powertools.metrics import MetricUnit

    # A queued tenant whose run failed (retried by the queue, then dead-lettered).
    metrics.add_metric("TenantFailures", MetricUnit.Count, 1)


def _direct(request: IndexRequest) -> IndexRequest:
    """The request a direct invoke may run: never every tenant at once (that is the queue's)."""
    if request.tenants is None:
        raise InvalidRequestError(
            f"a {request.trigger} run over every tenant is fanned out through the index queue "
            "(the schedule function enqueues one message per tenant), never run in one invocation"
        )
    return request


def build_indexer_handler(settings: Settings | None = None) -> LambdaHandler:
    """The Lambda handler for the settings (read from the environment when not given)."""
    # Loaded on the first invocation that needs it, keeping the init phase short.
    from aws_lambda_powertools import Logger, Metrics, Tracer
    from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers

    settings = settings or Settings.from_env()
    logger = Logger(service="foldgate-indexer", level=settings.log_level)
    copy_config_to_registered_loggers(source_logger=logger, include={"foldgate"})
    tracer = Tracer(service="foldgate-indexer")
    metrics = Metrics(namespace="foldgate", service="indexer")
    store = open_store(settings)
    indexer = Indexer(
        store,
        open_upstream(settings, open_upstream_oauth(settings)),
        max_concurrency=settings.index_concurrency,
        approvals=open_approvals(settings),
        embedder=open_embedder(settings),
        enrichment=open_enrichment(settings),
    )
    job = IndexJob(indexer, open_configs(settings), serve_timeout_s=settings.serve_timeout_s)
    # One loop per instance, reused by warm invocations, never installed as the thread's current loop
    # (asyncio.run would close it and leave the thread without one).
    loop = asyncio.new_event_loop()
    consumer = QueueConsumer(job, concurrency=settings.index_batch_concurrency)
    batch = build_batch_handler(
        consumer,
        loop,
        logger=logger,
        report=lambda result, elapsed_ms: _record(metrics, result, elapsed_ms),
        failed=lambda: _failed(metrics),
        max_receives=settings.index_max_receives,
    )

    @logger.inject_lambda_context(log_event=False)
    @tracer.capture_lambda_handler(capture_response=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        if is_sqs_batch(event):
            return batch(event, context)
        started = time.monotonic()
        try:
            request = _direct(parse_index_event(event, config_prefix=settings.config_prefix))
        except FoldgateError as exc:
            logger.error("rejected indexer event", extra={"reason": exc.message})
            # Loaded on the first invocation that needs it, keeping the init phase short.
            from aws_lambda_powertools.metrics import MetricUnit

            metrics.add_metric("RejectedEvents", MetricUnit.Count, 1)
            return {"error": {"code": exc.code, "message": exc.message}}
        remaining_ms = context.get_remaining_time_in_millis() if context is not None else None
        deadline = None if remaining_ms is None else started + remaining_ms / 1000
        result = loop.run_until_complete(job.run(request, deadline=deadline))
        elapsed_ms = (time.monotonic() - started) * 1000
        _record(metrics, result, elapsed_ms)
        doc = result.to_doc()
        logger.info("index run finished", extra={"run": doc, "elapsed_ms": round(elapsed_ms, 1)})
        return doc

    wrapped: LambdaHandler = handler
    return wrapped
