"""A machine grant's status: its kind and latest outcome, from this process when it made the grant,
else from the newest ``upstream.grant`` audit event in the activity log (the admin function in the
cloud makes no grants); the error code and when, never a token."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

from foldgate.config.tenant import ServerConfig, parse_tenant_config
from foldgate.edge.grant_status import machine_state
from foldgate.model.activity import Actor, AuditEvent
from foldgate.store.activity.base import StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore
from foldgate.upstream.oauth.outcomes import GrantOutcomes
from tests.recorders import ListRecorder
from tests.upstream_oauth import grant_store, oauth_context


def up(kind: str = "workload_jwt") -> ServerConfig:
    auth = {"kind": kind, "token_url": "https://as.example.com/token"}
    if kind == "workload_jwt":
        auth["assertion"] = {"source": "aws_sts", "audience": "https://as.example.com"}  # type: ignore[assignment]
    else:
        auth.update(client_id="m2m", client_secret_secret="m2m")
    return parse_tenant_config(
        {"servers": [{"name": "up", "url": "https://mcp.example.com/mcp", "auth": auth}]}
    ).servers[0]


def test_before_any_grant_the_kind_is_shown(tmp_path: Path) -> None:
    with grant_store(tmp_path) as store:
        entry = machine_state(oauth_context(store), None, "acme", up("client_credentials"))
    assert entry == {"kind": "client_credentials", "state": "machine", "last_grant": None}


def test_this_process_outcome_is_shown_with_its_code_and_time(tmp_path: Path) -> None:
    with grant_store(tmp_path) as store:
        ctx = oauth_context(store)
        ctx.outcomes.record("acme", "up", "workload_jwt", "refused", "invalid_grant")
        entry = machine_state(ctx, None, "acme", up())
    assert entry["state"] == "refused"
    assert entry["last_grant"]["error"] == "invalid_grant"
    assert entry["reason"].startswith("invalid_grant at 20")


def test_another_instance_outcome_comes_from_the_audit_log(tmp_path: Path) -> None:
    recorder = ListRecorder()
    outcomes = GrantOutcomes(recorder)
    outcomes.record("acme", "up", "workload_jwt", "obtained", expires_at=time.time() + 600)
    outcomes.record("acme", "up", "workload_jwt", "refused", "unauthorized_client")
    activity = SqliteActivityStore(tmp_path / "activity.sqlite3")
    try:
        now = time.time()
        # One second apart, in order (ids sort by millisecond): the refusal is the newer grant event.
        records = [replace(e, at=now - 10 + i).with_id() for i, e in enumerate(recorder.audits)]
        records.append(
            AuditEvent("acme", "upstream.connect", Actor("console"), at=now, target="up").with_id()
        )
        activity.put_many([StoredRecord(r, time.time() + 3600) for r in records])
        entry = machine_state(None, activity, "acme", up())
    finally:
        activity.close()
    assert (entry["state"], entry["last_grant"]["error"]) == ("refused", "unauthorized_client")


def test_a_hostile_error_code_is_not_repeated() -> None:
    recorder = ListRecorder()
    kept = GrantOutcomes(recorder).record("acme", "up", "workload_jwt", "refused", "<script>x</script>")
    assert kept.error == "unrecognised_error"
    assert "<script>" not in json.dumps([a.to_doc() for a in recorder.audits])
