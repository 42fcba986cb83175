"""Operator actions as audit events: who did what, to what, from where.

The admin API, the console, the OAuth callback and the CLI hand their actions here (:func:`audit`)
with an :class:`~foldgate.model.activity.Actor` naming who acted, never with a credential:

* ``operator_key``: a request with the operator key; ``who`` is the key's id (:func:`operator_key_id`,
  a keyed digest under a label of its own, so it names the key without revealing anything of it or of
  the digests the key is checked or derived with).
* ``console``: a console session; ``who`` is the session's handle (:func:`session_handle`, a digest of
  its random id: one operator's actions read as one session, and the handle signs nothing in).
* ``browser``: an OAuth consent finished in a browser (whoever holds the authorization server's
  answer; its address only).
* ``cli``: the ``foldgate`` command, ``who`` the local account that ran it, ``source`` the host.

``source`` is the client address as the rate limits count it (the socket peer, or API Gateway's source
IP), never a forwarded header the caller writes. Deployment-wide actions (console sign-ins and
sign-outs) are recorded under the tenant :data:`DEPLOYMENT`, which no tenant id can be.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from typing import Final

from starlette.requests import Request

from foldgate.edge.access import source_address
from foldgate.model.activity import Actor, AuditAction, AuditEvent, Recorder

__all__ = [
    "DEPLOYMENT",
    "audit",
    "browser_actor",
    "console_actor",
    "operator_actor",
    "operator_key_id",
    "session_handle",
]

log = logging.getLogger(__name__)

# The tenant of deployment-wide events: not a valid tenant id (those start with a letter or digit).
DEPLOYMENT: Final = "*"
_KEY_ID_LABEL: Final = b"foldgate operator key id v1"
# What an audit event says of its target and detail is cut here (ids, names and foldgate's messages).
_MAX_TEXT: Final = 300


def operator_key_id(secret: bytes) -> str:
    """The operator key's public id: ``op-`` and 12 hex digits of an HMAC of a fixed label under it."""
    return "op-" + hmac.new(secret, _KEY_ID_LABEL, hashlib.sha256).hexdigest()[:12]


def session_handle(sid: str) -> str:
    """A console session's handle in the audit log (a digest of its id: the id is never shown)."""
    return "session-" + hashlib.sha256(sid.encode("utf-8")).hexdigest()[:12]


def operator_actor(request: Request, secret: bytes | None) -> Actor:
    """The operator key's holder, at the request's address."""
    return Actor("operator_key", operator_key_id(secret) if secret else "", source_address(request))


def console_actor(request: Request, sid: str | None = None) -> Actor:
    """The console session of the request (or the one ``sid`` names: a sign-in's new session)."""
    if sid is None:
        session = getattr(request.state, "session", None)
        sid = getattr(session, "sid", None)
    return Actor("console", session_handle(sid) if isinstance(sid, str) else "", source_address(request))


def browser_actor(request: Request) -> Actor:
    """Whoever's browser completed an OAuth consent, at its address."""
    return Actor("browser", "", source_address(request))


def audit(
    recorder: Recorder,
    tenant: str,
    action: AuditAction,
    actor: Actor,
    *,
    target: str = "",
    outcome: str = "ok",
    detail: str = "",
) -> None:
    """Record one operator action (never raises: an action is never undone by its record failing)."""
    event = AuditEvent(
        tenant=tenant, action=action, actor=actor, target=target[:_MAX_TEXT], outcome=outcome,
        detail=detail[:_MAX_TEXT],
    )  # fmt: skip
    try:
        recorder.record(event)
    except Exception:  # a recorder must not raise; if one does, the action stands
        log.exception("the activity recorder failed; the audit event is lost")
