"""Factories of the observability parts (the activity log's store and recorder, OpenTelemetry): each
loads only what the settings pick, so a cold start pays for nothing else. Re-exported by
:mod:`foldgate.app.wiring`."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from foldgate.config.settings import Settings
from foldgate.config.source import ConfigSource
from foldgate.errors import FoldgateError

if TYPE_CHECKING:
    from foldgate.model.activity import Recorder
    from foldgate.store.activity.base import ActivityStore

__all__ = ["open_activity", "open_activity_store", "open_tracing"]

log = logging.getLogger("foldgate.app.wiring")


def open_activity_store(settings: Settings) -> ActivityStore | None:
    """The activity log's store, on the same backend as the catalog; None when the log is off or its
    store cannot open (logged: the activity log must never stop the gateway from serving)."""
    if settings.activity == "off":
        return None
    try:
        if settings.store == "dynamodb":
            # Loaded only where the settings pick this part: a cold start pays for nothing else.
            from foldgate.store.activity.dynamodb import DynamoActivityStore

            return DynamoActivityStore(settings.table_name)
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.store.activity.sqlite import SqliteActivityStore

        return SqliteActivityStore(settings.sqlite_path)
    except (FoldgateError, OSError) as exc:
        log.error("activity log unavailable: %s", getattr(exc, "message", exc))
        return None


def open_activity(
    settings: Settings, configs: ConfigSource | None = None, *, store: ActivityStore | None = None
) -> Recorder:
    """The process's recorder (make it once per process or Lambda instance): a BufferedRecorder on
    ``store`` (or :func:`open_activity_store`), each event kept for its tenant's
    ``activity.retention_days`` read from ``configs``; a NullRecorder when the log is off or has no
    store."""
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.model.activity import NullRecorder
    from foldgate.serve.activity_recorder import DEFAULT_RETENTION_DAYS, SQLITE_BATCH, BufferedRecorder

    store = store if store is not None else open_activity_store(settings)
    if settings.activity == "off" or store is None:
        return NullRecorder()

    def retention_days(tenant: str) -> int:
        return configs.get(tenant).activity.retention_days if configs is not None else DEFAULT_RETENTION_DAYS

    dynamodb = settings.store == "dynamodb"
    flush = settings.activity_flush_seconds or (10.0 if dynamodb else 1.0)
    # One BatchWriteItem takes 25 items; SQLite takes a second's events in one transaction (a commit per
    # 25 events cost twice the CPU per event: foldgate bench activity).
    batch = 25 if dynamodb else min(SQLITE_BATCH, settings.activity_buffer)
    return BufferedRecorder(
        store, retention_days, batch_size=batch, max_age_s=flush, capacity=settings.activity_buffer
    )


def open_tracing(settings: Settings) -> bool:
    """Record spans and export them over OTLP/HTTP when the settings name an endpoint (True then);
    otherwise nothing is loaded and requests only carry their trace id (foldgate.telemetry.tracing).
    With ``stage_log`` set, spans are timed per stage instead (a benchmark's breakdown), not exported."""
    if settings.stage_log:
        # Loaded only where the settings pick this part: a cold start pays for nothing else.
        from foldgate.telemetry.stages import StageTimer
        from foldgate.telemetry.tracing import install

        install(StageTimer(settings.stage_log))
        return True
    if not settings.otlp_endpoint:
        return False
    # Loaded only where the settings pick this part: a cold start pays for nothing else.
    from foldgate.telemetry.otel import otlp_backend
    from foldgate.telemetry.tracing import install

    install(
        otlp_backend(
            settings.otlp_endpoint,
            settings.otlp_headers,
            settings.otlp_timeout_s,
            service=settings.otel_service_name,
            sample_ratio=settings.trace_sample_ratio,
        )
    )
    return True
