"""The activity log in the operator's REST API: ``GET /api/v1/activity`` (a tenant's events newest
first, filtered, paginated by an opaque cursor; ``kind=audit`` for operator events; JSON lines with
``format=jsonl`` or ``Accept: application/x-ndjson``) and ``GET /api/v1/activity/summary`` (calls,
error rate and p50/p95 latency per server and tool over 1h, 24h or 7d).

The routes join the admin router, so the operator credential is checked before anything else, as on
every ``/api/v1`` route; agent tokens never open them. Every read names one tenant and the store
answers with that tenant's events only; a cursor issued for one tenant is refused for another (400).

A JSON-lines export follows the cursor through every page, streamed page by page. It stops after
about :data:`EXPORT_BYTES` (a Lambda response holds 6 MB) with a last line
``{"kind": "cursor", "cursor": ...}`` to continue from; a store failure midway ends the stream with
``{"kind": "error", ...}`` (the status line was sent with the first page).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

from fastapi import APIRouter, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from foldgate.edge.admin_docs import CURSOR_PATTERN, WHEN_PATTERN, responses
from foldgate.errors import InvalidRequestError, StoreError
from foldgate.serve.activity_summary import summarize
from foldgate.store.activity.base import ActivityPage, ActivityQuery, ActivityStore

__all__ = ["EXPORT_BYTES", "add_activity_routes", "parse_time"]

log = logging.getLogger(__name__)

EXPORT_BYTES: Final = 5_000_000
NDJSON: Final = "application/x-ndjson"
_CURSOR: Final = (
    "Opaque: the cursor of this listing's previous page (same tenant and kind), never made up; "
    "any other value is refused with 400."
)

# The next page: the same listing with the page's cursor (the stateful run of schemathesis follows it).
_NEXT_PAGE: Final = {
    "NextPage": {
        "operationId": "list_activity",
        "parameters": {
            "tenant": "$response.body#/tenant",
            "kind": "$response.body#/kind",
            "cursor": "$response.body#/cursor",
        },
        "description": "The next page of the same listing (no link when cursor is null).",
    }
}
Cursor = Annotated[str | None, Query(max_length=512, pattern=CURSOR_PATTERN, description=_CURSOR)]
Filter = Annotated[str | None, Query(min_length=1, max_length=256)]
When = Annotated[
    str | None,
    Query(
        max_length=40,
        pattern=WHEN_PATTERN,
        description="Epoch seconds or an ISO 8601 date or time from 1980 on (UTC when no offset).",
    ),
]


def parse_time(name: str, value: str | None) -> float | None:
    """Epoch seconds from epoch seconds or ISO 8601 text; InvalidRequestError naming ``name`` otherwise."""
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = datetime.fromisoformat(value)
        except ValueError:
            raise InvalidRequestError(f"{name}: not epoch seconds nor an ISO 8601 time") from None
        seconds = (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()
    if not 0 <= seconds < 1e11:  # NaN fails this too
        raise InvalidRequestError(f"{name}: out of range")
    return seconds


def _line(doc: dict[str, Any]) -> bytes:
    return (json.dumps(doc, separators=(",", ":"), ensure_ascii=False, default=str) + "\n").encode("utf-8")


def _export(store: ActivityStore, query: ActivityQuery, first: ActivityPage) -> Iterator[bytes]:
    """Every page from ``first`` on as JSON lines, cut after EXPORT_BYTES with a cursor line."""
    page, sent = first, 0
    while True:
        for record in page.records:
            line = _line(record.to_doc())
            sent += len(line)
            yield line
        if page.cursor is None:
            return
        if sent >= EXPORT_BYTES:
            yield _line({"kind": "cursor", "cursor": page.cursor})
            return
        query = replace(query, cursor=page.cursor)
        try:
            page = store.query(query)
        except StoreError as exc:
            log.warning("activity export of %s cut short: %s", query.tenant, exc.message)
            yield _line(
                {
                    "kind": "error",
                    "detail": "the activity store failed; continue from",
                    "cursor": query.cursor,
                }
            )
            return


def add_activity_routes(router: APIRouter, store: ActivityStore | None) -> None:
    """Add the activity routes to the admin router (``store`` None: the log is off, they answer 503)."""

    def opened() -> ActivityStore:
        if store is None:
            raise HTTPException(503, "the activity log is off in this deployment (FOLDGATE_ACTIVITY)")
        return store

    def read(action: Any) -> Any:
        try:
            return action()
        except InvalidRequestError as exc:
            raise HTTPException(400, exc.message) from None
        except StoreError as exc:
            log.warning("activity read failed: %s", exc.message)
            raise HTTPException(503, "the activity store is unavailable") from None

    @router.get(
        "/activity",
        summary="A tenant's events newest first (kind=audit: operator actions); JSON lines with format=jsonl",
        operation_id="list_activity",
        responses={
            **responses(s400="A malformed time, or a cursor that is not one of this listing's"),
            200: {
                "description": "A page of events and the cursor of the next (JSON lines: every page)",
                "content": {NDJSON: {"schema": {"type": "string", "description": "One JSON object a line"}}},
                "links": _NEXT_PAGE,
            },
        },
    )
    def activity(
        request: Request,
        # "*": the deployment's own events (console sign-ins and sign-outs), which belong to no tenant.
        tenant: Annotated[str, Query(pattern=r"^(\*|[A-Za-z0-9][A-Za-z0-9_.-]{0,127})$")],
        kind: Literal["call", "audit"] = "call",
        server: Filter = None,
        tool: Filter = None,
        principal: Filter = None,
        outcome: Filter = None,
        since: When = None,
        until: When = None,
        cursor: Cursor = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        format: Literal["json", "jsonl"] | None = None,  # the documented parameter name
    ) -> Response:
        s = opened()
        bounds = read(lambda: (parse_time("since", since), parse_time("until", until)))
        query = ActivityQuery(
            tenant, kind=kind, server=server, tool=tool, principal=principal, outcome=outcome,
            since=bounds[0], until=bounds[1], cursor=cursor, limit=limit,
        )  # fmt: skip
        page: ActivityPage = read(lambda: s.query(query))
        jsonl = format == "jsonl" or (format is None and NDJSON in request.headers.get("accept", ""))
        if jsonl:
            return StreamingResponse(_export(s, query, page), media_type=NDJSON)
        return JSONResponse({
            "tenant": tenant,
            "kind": kind,
            "events": [r.to_doc() for r in page.records],
            "cursor": page.cursor,
        })  # fmt: skip

    @router.get(
        "/activity/summary",
        summary="Calls, error rate and p50/p95 gateway and upstream latency per server and tool",
    )
    def activity_summary(
        tenant: Annotated[str, Query(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")],
        window: Literal["1h", "24h", "7d"] = "24h",
        buckets: Annotated[int, Query(ge=0, le=168, description="Time slices per server (0: none).")] = 0,
    ) -> dict[str, Any]:
        s = opened()
        summary = read(lambda: summarize(s, tenant, window, buckets=buckets))
        doc: dict[str, Any] = summary.to_doc()
        return doc
