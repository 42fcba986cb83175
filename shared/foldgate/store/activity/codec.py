"""What both activity backends share: the filterable fields of a record, the record as stored JSON and
back, and the page cursor.

A stored document came from this process's own ``to_doc``, but a table is a shared place: reading one
back never trusts it further than its types (unknown keys are ignored, wrong types become defaults or
the document is skipped as unreadable).

The cursor is opaque to callers (URL-safe base64 of a small JSON object) and bound to the tenant and
kind it was issued for: it names the last event id returned, and the backends build the next read from
the *query's* tenant and that id only, after checking that the cursor was issued for that tenant. A
cursor from another tenant's listing is refused, never followed, so it cannot open another partition.
Forging one for the same tenant gains nothing: it only moves the start within that tenant's own events.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass, fields
from typing import Any, Final

from foldgate.errors import InvalidRequestError
from foldgate.model.activity import ActivityEvent, ActivityRecord, Actor, AuditEvent
from foldgate.store.activity.base import ActivityQuery

__all__ = [
    "KINDS",
    "MAX_PAGE",
    "Filterable",
    "check_query",
    "decode_cursor",
    "encode_cursor",
    "filterable",
    "id_bounds",
    "kind_of",
    "matches",
    "record_from_json",
    "record_to_json",
]

KINDS: Final = ("call", "audit")
# new_event_id makes 13 digits of milliseconds, a dash and 12 hex digits; a cursor names one of those.
_EVENT_ID = re.compile(r"^[0-9A-Za-z-]{1,64}$")
_MAX_CURSOR = 512
MAX_PAGE: Final = 1000
# A stored event's JSON stays well under DynamoDB's 400 KB item limit (and a console row readable).
MAX_DOC: Final = 32_000
# Filter columns / attributes are cut to this (a query's value longer than it never matches).
MAX_FILTER: Final = 1024
_MAX_DETAIL: Final = 1000
_MAX_TEXT: Final = 256


@dataclass(frozen=True, slots=True)
class Filterable:
    """The fields a query narrows on. For an operator event ``principal`` is the actor (who did it)
    and ``server`` / ``tool`` are both its target."""

    server: str
    tool: str
    principal: str
    outcome: str


def kind_of(record: ActivityRecord) -> str:
    """``call`` or ``audit``."""
    return "audit" if isinstance(record, AuditEvent) else "call"


def filterable(record: ActivityRecord) -> Filterable:
    """The record's filterable fields (each at most :data:`MAX_FILTER` characters)."""
    if isinstance(record, AuditEvent):
        fields = (record.target, record.target, record.actor.who, record.outcome)
    else:
        fields = (record.server, record.tool, record.principal, record.outcome)
    return Filterable(*(str(f)[:MAX_FILTER] for f in fields))


def matches(query: ActivityQuery, record: ActivityRecord) -> bool:
    """Whether the record passes every filter the query sets (time bounds included)."""
    f = filterable(record)
    return (
        (query.server is None or f.server == query.server)
        and (query.tool is None or f.tool == query.tool)
        and (query.principal is None or f.principal == query.principal)
        and (query.outcome is None or f.outcome == query.outcome)
        and (query.since is None or record.at >= query.since)
        and (query.until is None or record.at < query.until)
    )


def check_query(query: ActivityQuery) -> None:
    """Refuse a query no backend answers: an unknown kind or a limit outside 1..MAX_PAGE."""
    if query.kind not in KINDS:
        raise InvalidRequestError(f"kind: must be one of {', '.join(KINDS)}")
    if not 1 <= query.limit <= MAX_PAGE:
        raise InvalidRequestError(f"limit: must be between 1 and {MAX_PAGE}")


def id_bounds(query: ActivityQuery) -> tuple[str | None, str | None]:
    """Event-id bounds that contain every event in ``[since, until)``: ``(low, high)``, low inclusive,
    high exclusive (ids start with the millisecond; the exact bounds on ``at`` are checked as well)."""
    low = f"{max(0, int(query.since * 1000)):013d}" if query.since is not None else None
    # An event at until - 0.0004 s has the same millisecond as until: keep that millisecond in range.
    high = f"{max(0, int(query.until * 1000) + 1):013d}" if query.until is not None else None
    return low, high


def _dumps(doc: dict[str, Any]) -> str:
    try:
        return json.dumps(doc, separators=(",", ":"), sort_keys=True, default=str)
    except (TypeError, ValueError, RecursionError):
        # Keys of mixed types cannot be sorted, a cycle or a deep nest cannot be written: the event is
        # kept without the part that failed (only ``arguments`` holds arbitrary values).
        return json.dumps(doc | {"arguments": None}, separators=(",", ":"), sort_keys=True, default=str)


_CALL_NAMES: Final = tuple(f.name for f in fields(ActivityEvent))


def record_to_json(record: ActivityRecord) -> str:
    """The record as compact JSON (``kind`` says which type), at most about :data:`MAX_DOC` characters:
    a longer one loses its ``arguments`` and has its ``detail`` cut, so one odd event never makes a
    batch fail (DynamoDB refuses items over 400 KB and the whole batch with them)."""
    if isinstance(record, ActivityEvent):
        # The fields as they are: json.dumps walks arguments itself (a nest too deep for it loses them,
        # see _dumps), so the deep copy asdict makes first (half this function's time) is not needed.
        doc = {"kind": "call"} | {name: getattr(record, name) for name in _CALL_NAMES}
    else:
        doc = record.to_doc()
    text = _dumps(doc)
    if len(text) <= MAX_DOC:
        return text
    detail = doc.get("detail")
    doc |= {"arguments": None, "detail": detail[:_MAX_DETAIL] if isinstance(detail, str) else detail}
    text = _dumps(doc)
    if len(text) <= MAX_DOC:
        return text
    # Still too long: a hostile client name, tool name or the like. Every text is cut.
    return _dumps({k: v[:_MAX_TEXT] if isinstance(v, str) else v for k, v in doc.items()})


_CALL_FIELDS: Final = {f.name: f for f in fields(ActivityEvent)}
_AUDIT_FIELDS: Final = {f.name: f for f in fields(AuditEvent)}


def _typed(name: str, value: Any, default: Any) -> Any:
    """``value`` when it has the type the field's default has (ints pass as floats), else the default."""
    if name == "arguments":
        return value
    if name == "guard":
        # Counts by rule id only: anything else a stored document holds there is dropped.
        if not isinstance(value, dict):
            return None
        counts = {k: v for k, v in value.items() if isinstance(k, str) and type(v) is int}
        return counts or None
    if isinstance(default, bool):
        return value if isinstance(value, bool) else default
    if isinstance(default, float) or name in ("at", "upstream_ms"):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return float(value) if ok else (None if name == "upstream_ms" else default)
    if isinstance(default, int):
        return value if isinstance(value, int) and not isinstance(value, bool) else default
    return value if isinstance(value, str) else default


def record_from_json(text: str) -> ActivityRecord | None:
    """The record a stored document holds; None when it is unreadable."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    if not isinstance(doc, dict):
        return None
    try:
        if doc.get("kind") == "audit":
            actor = doc.get("actor")
            actor = actor if isinstance(actor, dict) else {}
            return AuditEvent(
                tenant=str(doc["tenant"]),
                action=doc["action"],
                actor=Actor(
                    via=str(actor.get("via", "")),
                    who=str(actor.get("who", "")),
                    source=str(actor.get("source", "")),
                ),
                at=_typed("at", doc.get("at"), 0.0),
                target=_typed("target", doc.get("target"), ""),
                outcome=_typed("outcome", doc.get("outcome"), "ok"),
                detail=_typed("detail", doc.get("detail"), ""),
                event_id=_typed("event_id", doc.get("event_id"), ""),
            )
        values: dict[str, Any] = {}
        for name, field in _CALL_FIELDS.items():
            if name in ("tenant", "method", "surface", "outcome"):
                values[name] = str(doc[name])
            elif name in doc:
                default = field.default if name != "at" else 0.0
                values[name] = _typed(name, doc[name], default)
        return ActivityEvent(**values)
    except (KeyError, TypeError, ValueError):
        return None


def encode_cursor(tenant: str, kind: str, event_id: str) -> str:
    """The cursor that continues a listing of ``tenant``'s ``kind`` events after ``event_id``."""
    raw = json.dumps({"t": tenant, "k": kind, "e": event_id}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(query: ActivityQuery) -> str | None:
    """The event id to continue below (None: first page). Raises InvalidRequestError when the cursor is
    malformed or was issued for another tenant or kind."""
    if query.cursor is None or query.cursor == "":
        return None
    bad = InvalidRequestError("cursor: not a cursor of this tenant's listing")
    text = query.cursor
    if len(text) > _MAX_CURSOR:
        raise bad
    try:
        doc = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, binascii.Error):
        raise bad from None
    if not isinstance(doc, dict) or doc.get("t") != query.tenant or doc.get("k") != query.kind:
        raise bad
    event_id = doc.get("e")
    if not isinstance(event_id, str) or not _EVENT_ID.match(event_id):
        raise bad
    return event_id
