"""The status of a machine grant (``client_credentials``, ``workload_jwt``, the token exchanges) for
``/api/v1/status`` and the console: its kind and its latest outcome.

The outcome comes from this process (:class:`~foldgate.upstream.oauth.outcomes.GrantOutcomes`) when it
made a grant itself, else from the newest ``upstream.grant`` audit event in the activity log (the
admin function in the cloud makes no grants: the serving functions do, and audit each). Never a token,
an assertion or an authorization server's free text: the outcome, when, and its error code.
"""

from __future__ import annotations

import time
from typing import Any, Final

from foldgate.config.tenant import ServerConfig
from foldgate.errors import FoldgateError
from foldgate.model.activity import AuditEvent
from foldgate.store.activity.base import ActivityQuery, ActivityStore
from foldgate.upstream.oauth.context import OAuthContext
from foldgate.upstream.oauth.outcomes import GrantOutcome, outcome_of_audit

__all__ = ["MACHINE_KINDS", "machine_state"]

# The auth kinds whose tokens no person grants.
MACHINE_KINDS: Final = frozenset({"client_credentials", "workload_jwt", "token_exchange", "id_jag"})
EXCHANGE_KINDS: Final = frozenset({"token_exchange", "id_jag"})
# How many of a server's newest audit events are read to find its latest grant.
_AUDIT_LOOKBACK: Final = 25


def _audited(activity: ActivityStore, tenant: str, server: str) -> GrantOutcome | None:
    try:
        page = activity.query(
            ActivityQuery(tenant=tenant, kind="audit", server=server, limit=_AUDIT_LOOKBACK)
        )
    except FoldgateError:
        return None  # the status page never fails for its activity log
    for record in page.records:
        if isinstance(record, AuditEvent):
            found = outcome_of_audit(record)
            if found is not None:
                return found
    return None


def _clock(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(at))


def machine_state(
    oauth: OAuthContext | None, activity: ActivityStore | None, tenant: str, server: ServerConfig
) -> dict[str, Any]:
    """``server``'s entry in the status route's ``auth`` block: ``kind``; ``state`` (``obtained``,
    ``refused``, ``failed``, or ``machine`` / ``exchange`` before any grant); ``reason`` (the error
    code and when); ``last_grant`` (outcome, at, error, expires_at)."""
    last = oauth.outcomes.last(tenant, server.name) if oauth is not None else None
    if last is None and activity is not None:
        last = _audited(activity, tenant, server.name)
    # Before any grant: ``exchange`` for the exchange kinds (tokens per call, nothing to connect).
    initial = "exchange" if server.auth.kind in EXCHANGE_KINDS else "machine"
    entry: dict[str, Any] = {"kind": server.auth.kind, "state": initial, "last_grant": None}
    if last is None:
        return entry
    entry["state"] = last.outcome
    entry["last_grant"] = last.to_doc()
    entry["reason"] = f"{last.error} at {_clock(last.at)}" if last.error else f"at {_clock(last.at)}"
    return entry
