"""The Activity and Audit pages' view-models: the filters (as the admin API's, read from hostile query
parameters), one page of a tenant's events newest first, the events newer than the newest one shown
(the page's live refresh), and each event's every field for its expanded row.

Every query names the page's tenant and nothing from the request can change it: a filter or a cursor
only narrows that tenant's events. Values are returned as text; the templates escape them (tool
names, client names and details come from agents and upstreams)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from foldgate.edge.operator_audit import DEPLOYMENT
from foldgate.errors import FoldgateError, InvalidRequestError
from foldgate.model.activity import OUTCOMES, ActivityEvent, ActivityRecord, AuditEvent
from foldgate.model.naming import display_name
from foldgate.store.activity.base import ActivityQuery, ActivityStore

__all__ = [
    "EVENTS_PER_PAGE",
    "Filters",
    "activity_view",
    "event_fields",
    "newer_view",
    "parse_filters",
    "when",
]

EVENTS_PER_PAGE = 50
# A filter value longer than this matches nothing we record: refused rather than sent to the store.
_MAX_VALUE = 512
# Cursors are the store's own tokens; one longer than this is not one of them.
_MAX_CURSOR = 2048
# An expanded event's ``arguments`` (a digest or a value-free shape) shown up to this many characters.
_MAX_ARGUMENTS = 4000
_EVENT_ID = re.compile(r"\d{13}-[0-9a-f]{12}")
_AUDIT_OUTCOMES = ("ok", "refused")


@dataclass(frozen=True, slots=True)
class Filters:
    """What the page narrows its tenant's events to (all optional), as the admin API takes them."""

    server: str = ""
    tool: str = ""
    principal: str = ""
    outcome: str = ""
    since: float | None = None
    until: float | None = None
    cursor: str = ""

    def query(self, tenant: str, kind: str, limit: int) -> ActivityQuery:
        """The store query for ``tenant`` (always the page's own tenant)."""
        return ActivityQuery(
            tenant=tenant,
            kind=kind,
            server=self.server or None,
            tool=self.tool or None,
            principal=self.principal or None,
            outcome=self.outcome or None,
            since=self.since,
            until=self.until,
            cursor=self.cursor or None,
            limit=limit,
        )

    def params(self, tenant: str, **overrides: str) -> str:
        """The query string that shows these filters again (empty ones left out)."""
        values = {
            "tenant": tenant,
            "server": self.server,
            "tool": self.tool,
            "principal": self.principal,
            "outcome": self.outcome,
            "since": _form_time(self.since),
            "until": _form_time(self.until),
            "cursor": self.cursor,
            **overrides,
        }
        return urlencode({k: v for k, v in values.items() if v})


def when(epoch: float) -> str:
    """An event's time in UTC to the millisecond (a stored time no calendar holds is shown as it is)."""
    try:
        stamp = datetime.fromtimestamp(epoch, UTC)
    except (ValueError, OverflowError, OSError):
        return str(epoch)
    return stamp.strftime("%Y-%m-%d %H:%M:%S.") + f"{stamp.microsecond // 1000:03d} UTC"


def _form_time(epoch: float | None) -> str:
    """A time as the page's since/until inputs show it (UTC, to the second)."""
    if epoch is None:
        return ""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _parse_time(text: str, name: str) -> float | None:
    """Epoch seconds, or an ISO date-time (UTC unless it names its offset), or '' for none."""
    text = text.strip()
    if not text:
        return None
    if len(text) > 40:
        raise ValueError(f"{name}: not a time")
    try:
        number = float(text)
    except ValueError:
        pass
    else:
        if not math.isfinite(number) or not 0 <= number < 253402300800:
            raise ValueError(f"{name}: not a time")
        return number
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"{name}: expected a date and time (UTC) or epoch seconds") from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.timestamp()


def parse_filters(params: Mapping[str, str], kind: str = "call") -> tuple[Filters, str | None]:
    """The filters a request names, and the first problem with them (the filters then match nothing
    more than they are: a bad value is dropped, never widened into another tenant or kind)."""
    problems: list[str] = []
    values: dict[str, str] = {}
    # An operator event's target is its server (and tool), its actor's name its principal (the store's).
    names = ("server", "tool", "principal") if kind == "call" else ("server", "principal")
    for name in names:
        value = params.get(name, "").strip()
        if len(value) > _MAX_VALUE:
            problems.append(f"{name}: longer than {_MAX_VALUE} characters")
            value = ""
        values[name] = value
    outcome = params.get("outcome", "").strip()
    allowed = OUTCOMES if kind == "call" else _AUDIT_OUTCOMES
    if outcome and outcome not in allowed:
        problems.append(f"outcome: one of {', '.join(allowed)}")
        outcome = ""
    times: dict[str, float | None] = {}
    for name in ("since", "until"):
        try:
            times[name] = _parse_time(params.get(name, ""), name)
        except ValueError as exc:
            problems.append(str(exc))
            times[name] = None
    cursor = params.get("cursor", "")
    if len(cursor) > _MAX_CURSOR:
        problems.append("cursor: not one this console gave")
        cursor = ""
    found = Filters(outcome=outcome, since=times["since"], until=times["until"], cursor=cursor, **values)
    return found, problems[0] if problems else None


def _text(value: Any) -> str:
    """A field's value as the expanded row shows it."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".")
    if isinstance(value, str):
        return value
    shown = json.dumps(value, sort_keys=True, indent=2, default=str, ensure_ascii=False)
    if len(shown) > _MAX_ARGUMENTS:
        return shown[:_MAX_ARGUMENTS] + f"\n… ({len(shown) - _MAX_ARGUMENTS} more characters)"
    return shown


def event_fields(record: ActivityRecord) -> list[tuple[str, str]]:
    """Every field of an event, in its declared order, as (name, text) for the expanded row."""
    shown: list[tuple[str, str]] = []
    for f in fields(record):
        value = getattr(record, f.name)
        if f.name == "at":
            shown.append(("at", f"{when(value)} ({value:.3f})"))
        elif f.name == "actor":
            shown += [(f"actor.{k}", _text(getattr(value, k))) for k in ("via", "who", "source")]
        else:
            shown.append((f.name, _text(value)))
    return shown


def _row(record: ActivityRecord) -> dict[str, Any]:
    """An event's summary line and its every field."""
    row: dict[str, Any] = {"id": record.event_id, "when": when(record.at), "fields": event_fields(record)}
    row["outcome"] = record.outcome
    if isinstance(record, ActivityEvent):
        # A tool call names its tool as agents call it (server__tool); other methods keep their subject.
        named = record.method == "tools/call" and record.server and record.tool
        row.update(
            server=record.server,
            tool=record.tool,
            tool_name=display_name(f"{record.server}:{record.tool}") if named else record.tool,
            principal=record.principal,
            method=record.method,
            client=" ".join(p for p in (record.client_name, record.client_version) if p),
            ms=_text(round(record.gateway_ms, 1)),
        )
    elif isinstance(record, AuditEvent):
        row.update(
            action=record.action,
            actor=" ".join(p for p in (record.actor.via, record.actor.who) if p),
            source=record.actor.source,
            # A tool is named as agents call it (server__tool), whoever recorded its key.
            target=display_name(record.target) if record.action.startswith("approval.") else record.target,
            detail=record.detail,
        )
    return row


def activity_view(
    store: ActivityStore | None,
    tenant: str,
    params: Mapping[str, str],
    kind: str = "call",
    *,
    deployment: bool = False,
) -> dict[str, Any]:
    """One page of the tenant's ``kind`` events (``call`` or ``audit``) newest first, with the filters
    shown again, the link to the next (older) page, and what the live refresh polls from. With
    ``deployment``, the operator events of no one tenant instead (console sign-ins and sign-outs,
    recorded under :data:`~foldgate.edge.operator_audit.DEPLOYMENT`); the links keep the page's tenant."""
    filters, error = parse_filters(params, kind)
    partition = DEPLOYMENT if deployment else tenant
    scope = {"scope": "deployment"} if deployment else {}
    model: dict[str, Any] = {
        "filters": filters,
        "outcomes": OUTCOMES if kind == "call" else _AUDIT_OUTCOMES,
        "form": {"since": _form_time(filters.since), "until": _form_time(filters.until)},
        "error": error,
        "rows": [],
        "older": None,
        "newest": filters.params(tenant, cursor="", **scope),
        "live": None,
        "available": store is not None,
        "deployment": deployment,
    }
    if store is None:
        return model
    try:
        page = store.query(filters.query(partition, kind, EVENTS_PER_PAGE))
    except InvalidRequestError as exc:
        # A cursor of another tenant's (or another kind's) listing, or one edited: refused, not followed.
        model["error"] = exc.message
        return model
    except FoldgateError as exc:
        model["error"] = f"the activity log cannot be read now: {exc.message}"
        return model
    records = [r for r in page.records if r.tenant == partition]
    model["rows"] = [_row(r) for r in records]
    if page.cursor:
        model["older"] = filters.params(tenant, cursor=page.cursor, **scope)
    if kind == "call" and not filters.cursor and not deployment:
        # Only the first page refreshes itself: a later one is a fixed window into the past.
        newest = records[0].event_id if records else ""
        model["live"] = filters.params(tenant, after=newest)
    return model


def newer_view(store: ActivityStore | None, tenant: str, params: Mapping[str, str]) -> dict[str, Any]:
    """The tenant's call events newer than ``after`` (an event id the page shows) under the page's
    filters, newest first: what the live refresh adds at the top. ``more`` says that some arrived
    beyond one page (the operator reloads the page, ``reload``, for them)."""
    after = params.get("after", "")
    filters, error = parse_filters({k: v for k, v in params.items() if k != "cursor"})
    model: dict[str, Any] = {"rows": [], "more": False, "live": None, "error": error}
    model["reload"] = filters.params(tenant)
    if store is None or error is not None or (after and not _EVENT_ID.fullmatch(after)):
        return model
    query = filters
    if after:
        # Ids sort by time: from the newest shown event's millisecond, then only the ids past it.
        since = int(after[:13]) / 1000
        if filters.since is None or filters.since < since:
            query = replace(filters, since=since)
    try:
        page = store.query(query.query(tenant, "call", EVENTS_PER_PAGE))
    except FoldgateError:
        # The next poll tries again; the rows already shown stay.
        model["live"] = filters.params(tenant, after=after)
        return model
    records = [r for r in page.records if r.tenant == tenant and r.event_id > after]
    model["rows"] = [_row(r) for r in records]
    model["more"] = page.cursor is not None and len(records) == len(page.records)
    model["live"] = filters.params(tenant, after=records[0].event_id if records else after)
    return model
