"""The last outcome of each machine grant, and an audit event for every one.

The machine kinds (``client_credentials``, ``workload_jwt``, the token exchanges) get their tokens
with no person involved, so an operator learns how they fare only from here: every token obtained or
refused calls :meth:`GrantOutcomes.record`, which

* keeps the latest outcome per (tenant, server) in this process (``/api/v1/status`` and the console
  show it with the auth kind), and
* records an ``upstream.grant`` audit event (actor ``system``, the kind as ``who``; target the
  server; outcome ``ok``, ``refused`` or ``failed``; the authorization server's error code in the
  detail) in the activity log, where instances that made no grant themselves (the admin function in
  the cloud) read the latest one.

Only foldgate's words, the kind, a token lifetime and an RFC 6749 error code go in: never an assertion,
a token, a client secret or the authorization server's free text.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from dataclasses import dataclass
from typing import Final, Literal

from foldgate.model.activity import Actor, AuditEvent, NullRecorder, Recorder

__all__ = ["GrantOutcome", "GrantOutcomes", "Outcome", "outcome_of_audit"]

log = logging.getLogger(__name__)

Outcome = Literal["obtained", "refused", "failed"]
_AUDIT_OUTCOME: Final[dict[str, str]] = {"obtained": "ok", "refused": "refused", "failed": "failed"}
# An RFC 6749 error code is a short token; anything else from a server is replaced.
_CODE: Final = re.compile(r"^[A-Za-z0-9_.:\-]{1,64}$")
_MAX_DETAIL: Final = 200


@dataclass(frozen=True, slots=True)
class GrantOutcome:
    """How a server's latest grant went: ``error`` is the authorization server's code (refused) or
    foldgate's short reason (failed: the assertion source or the server unreachable)."""

    kind: str
    outcome: Outcome
    at: float
    error: str | None = None
    expires_at: float | None = None

    def to_doc(self) -> dict[str, object]:
        """The outcome as the status route shows it."""
        return {
            "outcome": self.outcome,
            "at": self.at,
            "error": self.error,
            "expires_at": self.expires_at,
        }


def _code(error: str | None) -> str | None:
    if error is None:
        return None
    return error if _CODE.match(error) else "unrecognised_error"


class GrantOutcomes:
    """The latest outcome per (tenant, server) of this process; each one also audited."""

    def __init__(self, recorder: Recorder | None = None) -> None:
        self.recorder: Recorder = recorder if recorder is not None else NullRecorder()
        self._last: dict[tuple[str, str], GrantOutcome] = {}
        self._lock = threading.Lock()

    def record(
        self,
        tenant: str,
        server: str,
        kind: str,
        outcome: Outcome,
        error: str | None = None,
        *,
        expires_at: float | None = None,
        reason: str = "",
    ) -> GrantOutcome:
        """Note a grant's outcome and audit it. ``error``: the authorization server's RFC 6749 code
        (refused) or a short code of foldgate's (failed); ``reason``: foldgate's own words for the
        detail (never a server's text, an assertion or a token). Never raises."""
        now = time.time()
        entry = GrantOutcome(kind, outcome, now, _code(error), expires_at)
        with self._lock:
            self._last[(tenant, server)] = entry
        detail = f"{kind}: {outcome}"
        if entry.error:
            detail += f" ({entry.error})"
        if expires_at is not None:
            detail += f", expires in {max(0, round(expires_at - now))} s"
        if reason:
            detail += f"; {reason}"
        event = AuditEvent(
            tenant=tenant,
            action="upstream.grant",
            actor=Actor("system", kind),
            at=now,
            target=server,
            outcome=_AUDIT_OUTCOME[outcome],
            detail=detail[:_MAX_DETAIL],
        )
        # The log line of every grant (the indexer and the task worker keep no activity log).
        log.info("%s/%s: upstream grant %s", tenant, server, detail)
        try:
            self.recorder.record(event)
        except Exception:  # a recorder must not raise; if one does, the grant stands
            log.exception("the activity recorder failed; the grant's audit event is lost")
        return entry

    def last(self, tenant: str, server: str) -> GrantOutcome | None:
        """The latest outcome of ``server``'s grant in this process (None: none yet)."""
        return self._last.get((tenant, server))


def outcome_of_audit(event: AuditEvent) -> GrantOutcome | None:
    """The outcome an ``upstream.grant`` audit event recorded (None for any other event): what an
    instance that made no grant itself shows."""
    if event.action != "upstream.grant":
        return None
    kind, _, rest = event.detail.partition(": ")
    outcome: Outcome = "obtained" if event.outcome == "ok" else "refused"
    if event.outcome == "failed":
        outcome = "failed"
    found = re.match(r"^\w+ \(([^)]*)\)", rest)
    return GrantOutcome(event.actor.who or kind, outcome, event.at, found.group(1) if found else None)
