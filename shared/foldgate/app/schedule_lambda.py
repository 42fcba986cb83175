"""IndexScheduleFunction: the schedules' fan-out. Lists the tenants and enqueues one index message per
tenant; it indexes nothing, reaches no upstream and holds no table rights (least privilege: the
function whose role may send to the index queue is this one, and it only lists config names).

Its events are the two EventBridge schedules: the hourly ``Scheduled Event`` (trigger ``schedule``,
window = the event's time) and the freshness schedule's ``{"action": "freshness"}`` (window = now).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any, Final

from foldgate.app.wiring import open_configs
from foldgate.config.settings import Settings
from foldgate.errors import ConfigError, FoldgateError, InvalidRequestError
from foldgate.index.fanout import TRIGGERS, IndexQueue, enqueue_tenants
from foldgate.index.job import parse_index_event

__all__ = ["build_schedule_handler", "trigger_of"]

LambdaHandler = Callable[[dict[str, Any], Any], dict[str, Any]]
QueueFactory = Callable[[str], IndexQueue]

_EVENT_TIME: Final = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")


def trigger_of(event: Any, *, config_prefix: str, now: float | None = None) -> tuple[str, str]:
    """(trigger, window) of a schedule event; InvalidRequestError for anything else (this function
    fans out schedules only: a one-tenant trigger goes straight to the IndexerFunction)."""
    request = parse_index_event(event, config_prefix=config_prefix)
    if request.trigger not in TRIGGERS or request.tenants is not None:
        raise InvalidRequestError(f"the schedule function fans out schedules only, not {request.trigger!r}")
    stamp = event.get("time") if request.trigger == "schedule" else None
    if not (isinstance(stamp, str) and _EVENT_TIME.match(stamp)):
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() if now is None else now))
    return request.trigger, stamp


def _sqs_queue(url: str) -> IndexQueue:
    # The SQS adapter (and boto3) load only in this function.
    from foldgate.index.sqs_queue import SqsIndexQueue

    return SqsIndexQueue(url)


def build_schedule_handler(
    settings: Settings | None = None, *, queue: QueueFactory = _sqs_queue
) -> LambdaHandler:
    """The Lambda handler for the settings (read from the environment when not given)."""
    # Loaded on the first invocation that needs it, keeping the init phase short.
    from aws_lambda_powertools import Logger, Metrics
    from aws_lambda_powertools.logging.utils import copy_config_to_registered_loggers
    from aws_lambda_powertools.metrics import MetricUnit

    settings = settings or Settings.from_env()
    if not settings.index_queue_url:
        raise ConfigError("FOLDGATE_INDEX_QUEUE_URL is not set: the schedule function has nowhere to send")
    logger = Logger(service="foldgate-schedule", level=settings.log_level)
    copy_config_to_registered_loggers(source_logger=logger, include={"foldgate"})
    metrics = Metrics(namespace="foldgate", service="schedule")
    configs = open_configs(settings)
    sink = queue(settings.index_queue_url)

    @logger.inject_lambda_context(log_event=False)
    @metrics.log_metrics
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            trigger, window = trigger_of(event, config_prefix=settings.config_prefix)
        except FoldgateError as exc:
            logger.error("rejected schedule event", extra={"reason": exc.message})
            metrics.add_metric("RejectedEvents", MetricUnit.Count, 1)
            return {"error": {"code": exc.code, "message": exc.message}}
        started = time.monotonic()
        # A failure to list or to send raises: the invocation fails and EventBridge retries it.
        result = enqueue_tenants(configs, sink, trigger, window)
        elapsed_ms = round((time.monotonic() - started) * 1000, 1)
        metrics.add_metric("TenantsEnqueued", MetricUnit.Count, result.tenants)
        doc = result.to_doc()
        logger.info("tenants enqueued", extra={**doc, "elapsed_ms": elapsed_ms})
        return doc

    wrapped: LambdaHandler = handler
    return wrapped
