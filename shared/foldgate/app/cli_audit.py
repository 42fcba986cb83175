"""Operator actions the CLI does, recorded as audit events in the deployment's activity log, with the
local account and host as the actor. Shared by every ``foldgate`` subcommand that changes something."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from foldgate.model.activity import Actor, AuditAction, Recorder

__all__ = ["cli_audit"]


def _recorder(settings: Any) -> Recorder:
    """Where the CLI's operator actions are recorded: the deployment's activity log (its recorder is
    opened per command and closed, so flushed, before the command exits)."""
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.app.wiring import open_activity

    return open_activity(settings)


def _cli_actor() -> Actor:
    """The local account running the command, on this host (from the account database, not the
    environment: only the config package reads that)."""
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    import os
    import pwd
    import socket

    from foldgate.model.activity import Actor

    try:
        who = pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        who = f"uid {os.getuid()}"
    return Actor("cli", who, socket.gethostname())


def cli_audit(settings: Any, tenant: str, action: AuditAction, **what: str) -> None:
    """Record one operator action the CLI did (never fails the command)."""
    # Loaded per command: the CLI starts fast and each command pays only for what it uses.
    from foldgate.edge.operator_audit import audit

    recorder = _recorder(settings)
    audit(recorder, tenant, action, _cli_actor(), **what)
    close = getattr(recorder, "close", None)
    if callable(close):
        close()  # a buffered recorder writes what it holds before the process ends
