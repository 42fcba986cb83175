"""What the activity log records: one event per request that does work, one per operator action.

These types are the one interface between the places that observe (every serving surface, the admin
API and console, the CLI) and the places that keep or export what they observed (the activity store,
metrics, traces). Observers build an event and hand it to a :class:`Recorder`, which must return at
once and never raise: recording may drop an event (and count the drop) but never fails or delays the
call it describes.

Events never carry a secret: the principal is a token id or an OAuth issuer + subject, and argument or
result values are absent unless the tenant chose ``activity.arguments: hashed | redacted`` (then
``arguments`` holds the digest or the value-free shape, never the values); ``guard`` counts what the
result guard found by rule, never what it found.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal, Protocol, TypeVar, get_args

__all__ = [
    "AUDIT_ACTIONS",
    "OUTCOMES",
    "ActivityEvent",
    "ActivityRecord",
    "Actor",
    "AuditAction",
    "AuditEvent",
    "NullRecorder",
    "Outcome",
    "Recorder",
    "new_event_id",
]

# How a request ended, from the agent's side. ``ok``: answered with a result that is not an error;
# ``tool_error``: the upstream answered ``isError``; ``held``: the tool is held for review;
# ``needs_consent``: a per-user upstream needs the user to connect first.
Outcome = Literal[
    "ok",
    "tool_error",
    "invalid_arguments",
    "not_found",
    "denied",
    "held",
    "rate_limited",
    "needs_consent",
    "upstream_error",
    "upstream_timeout",
    "deadline",
    "internal_error",
]
OUTCOMES: tuple[Outcome, ...] = get_args(Outcome)

AuditAction = Literal[
    "approval.approve",
    "approval.reject",
    "token.create",
    "token.revoke",
    "upstream.connect",
    "upstream.disconnect",
    # A machine grant (client_credentials, workload_jwt, token exchange) obtained or refused.
    "upstream.grant",
    "config.save",
    "index.reindex",
    "tool.try",
    "console.sign_in",
    "console.sign_in_refused",
    "console.sign_out",
]
AUDIT_ACTIONS: tuple[AuditAction, ...] = get_args(AuditAction)


def new_event_id(at: float) -> str:
    """A unique id that sorts by time: milliseconds since the epoch (13 digits) then randomness, so
    newest-first order is the reverse of the id's order in every backend."""
    return f"{int(at * 1000):013d}-{uuid.uuid4().hex[:12]}"


@dataclass(frozen=True, slots=True)
class ActivityEvent:
    """One request that did work: who asked what of which tool, how long it took and how it ended.

    ``gateway_ms`` is the whole time foldgate spent on the request, upstream included;
    ``upstream_ms`` the part spent waiting for the upstream (None when none was called).
    """

    tenant: str
    method: str  # "tools/call", "resources/read", "prompts/get", ...
    surface: str  # "mcp", "mcp/search", "mcp/code", "mcp/lambda", ...
    outcome: Outcome
    at: float = field(default_factory=time.time)
    request_id: str = ""
    principal: str = ""  # a token id, "oauth:<issuer>#<subject>", or "*" for unauthenticated local
    client_name: str = ""
    client_version: str = ""
    protocol: str = ""  # the negotiated MCP protocol version
    server: str = ""
    tool: str = ""  # the upstream tool (or resource URI / prompt name) the request was about
    tier: str = ""
    gateway_ms: float = 0.0
    upstream_ms: float | None = None
    request_bytes: int = 0
    response_bytes: int = 0
    cut_to_read_cache: bool = False
    trace_id: str = ""
    detail: str = ""  # a short reason for an outcome other than ok, never a value from the arguments
    arguments: Any = None  # absent by default; a digest or a value-free shape when the tenant chose
    # What the result guard found in the answer: counts by rule id (a secret's kind such as
    # ``aws_access_key``, an injection rule such as ``instruction-override``), never a value.
    guard: dict[str, int] | None = None
    event_id: str = ""

    def with_id(self) -> ActivityEvent:
        """This event with an ``event_id`` (a new time-ordered one when it has none)."""
        if self.event_id:
            return self
        return _replace_id(self, new_event_id(self.at))

    def to_doc(self) -> dict[str, Any]:
        """The event as JSON (``kind`` says which record type it is)."""
        return {"kind": "call", **asdict(self)}


@dataclass(frozen=True, slots=True)
class Actor:
    """Who did an operator action: ``via`` is ``console`` (a session), ``operator_key``, ``cli`` or
    ``system``; ``who`` names the session's user or the key's id (never the key); ``source`` where the
    request came from (client address), when known."""

    via: str
    who: str = ""
    source: str = ""


@dataclass(frozen=True, slots=True)
class AuditEvent:
    """An operator action: approvals, tokens, connections, config saves, reindexes, sign-ins."""

    tenant: str
    action: AuditAction
    actor: Actor
    at: float = field(default_factory=time.time)
    target: str = ""  # what it acted on: a server, a tool, a token id, ...
    outcome: str = "ok"  # "ok" or "refused"
    detail: str = ""
    event_id: str = ""

    def with_id(self) -> AuditEvent:
        """This event with an ``event_id`` (a new time-ordered one when it has none)."""
        if self.event_id:
            return self
        return _replace_id(self, new_event_id(self.at))

    def to_doc(self) -> dict[str, Any]:
        """The event as JSON (``kind`` says which record type it is)."""
        return {"kind": "audit", **asdict(self)}


ActivityRecord = ActivityEvent | AuditEvent


_E = TypeVar("_E", ActivityEvent, AuditEvent)


def _replace_id(event: _E, event_id: str) -> _E:
    return replace(event, event_id=event_id)


class Recorder(Protocol):
    """Where observers hand events. ``record`` returns at once and never raises."""

    def record(self, event: ActivityRecord) -> None:
        """Accept an event (it may be buffered, sampled into metrics, or dropped and counted)."""
        ...


class NullRecorder:
    """Records nothing: the default where no activity log is configured."""

    def record(self, event: ActivityRecord) -> None:
        """Drop the event."""
