"""`foldgate tenant diff | apply | export --config FILE`: the same commands against the local config
file `foldgate serve --config` reads, by the local rules (stdio servers and loopback issuers allowed).
Every kept tenant file and the demo's config round-trip through it; secrets go to the state folder's
secrets/ (mode 0600), where local `auth:` secrets are read, and are never printed."""

from __future__ import annotations

import json
import stat
import typing
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from foldgate.app.cli import main
from foldgate.config.source import FileConfigSource
from foldgate.config.tenant import TenantConfig, load_tenant_config, read_config_document
from foldgate.model.jsonutil import canonical
from tests.tenant_files import demo_config, tenant_files


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "state"
    monkeypatch.setenv("FOLDGATE_SQLITE_PATH", str(folder / "foldgate.sqlite3"))
    for name in ("FOLDGATE_CONFIG_SOURCE", "FOLDGATE_STORE", "FOLDGATE_INDEXER_FUNCTION"):
        monkeypatch.delenv(name, raising=False)
    return folder


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _models(annotation: Any, seen: set[type[BaseModel]]) -> None:
    """Every pydantic model a field's type reaches (unions, lists, dicts, Annotated included)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if annotation not in seen:
            seen.add(annotation)
            for field in annotation.model_fields.values():
                _models(field.annotation, seen)
        return
    for arg in typing.get_args(annotation):
        _models(arg, seen)


def _set_fields(value: Any, found: set[tuple[str, str]]) -> None:
    """(model, field) for every field a parsed config sets explicitly, however deep."""
    if isinstance(value, BaseModel):
        found.update((type(value).__name__, name) for name in value.model_fields_set)
        for name in type(value).model_fields:
            _set_fields(getattr(value, name), found)
    elif isinstance(value, list | tuple):
        for item in value:
            _set_fields(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _set_fields(item, found)


def test_the_kept_tenant_files_set_every_field_of_the_config_models() -> None:
    """So that "every tenant config round-trips" covers the whole model: a field added to the models
    needs a kept file that sets it (tests/data/tenants/)."""
    models: set[type[BaseModel]] = set()
    _models(TenantConfig, models)
    every = {(m.__name__, name) for m in models for name in m.model_fields}
    found: set[tuple[str, str]] = set()
    for path in tenant_files():
        _set_fields(load_tenant_config(path), found)
    assert sorted(every - found) == []


@pytest.mark.parametrize("index", range(len(tenant_files()) + 1))
def test_every_tenant_file_round_trips_through_the_local_config_file(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], index: int
) -> None:
    """apply -> the file source serves the file's config -> export is the same document -> applying
    the export changes nothing (stdio servers included: local rules)."""
    original = [*tenant_files(), demo_config(tmp_path)][index]
    live = tmp_path / "live.yaml"
    code, out, _ = run(capsys, "tenant", "apply", "-f", str(original), "--config", str(live))
    assert code == 0
    assert json.loads(out)["written"] is True
    assert FileConfigSource(live).get("default") == load_tenant_config(original)

    code, exported, _ = run(capsys, "tenant", "export", "--config", str(live))
    assert code == 0
    assert canonical(yaml.safe_load(exported)) == canonical(read_config_document(original))
    again = tmp_path / "exported.yaml"
    again.write_text(exported)
    assert run(capsys, "tenant", "diff", "-f", str(again), "--config", str(live))[:2] == (0, "")
    code, out, _ = run(capsys, "tenant", "apply", "-f", str(again), "--config", str(live))
    assert (code, json.loads(out)["written"]) == (0, False)


def test_local_secrets_land_in_the_state_folder_privately_and_are_never_printed(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("CRM_SECRET", canary)
    file = tmp_path / "tenant.yaml"
    file.write_text(
        "secrets: {crm-client: {from_env: CRM_SECRET}}\n"
        "servers:\n  - name: crm\n    url: http://127.0.0.1:9/mcp\n"
        "    auth: {kind: client_credentials, token_url: 'http://127.0.0.1:9/token', client_id: fg,"
        " client_secret_secret: crm-client}\n"
        "  - {name: time, transport: stdio, command: [uvx, mcp-server-time]}\n"
    )
    live = tmp_path / "live.json"
    said = []
    code, out, err = run(capsys, "tenant", "diff", "-f", str(file), "--config", str(live))
    said += [out, err]
    assert code == 1
    assert "secret crm-client: will be set" in out
    code, out, err = run(capsys, "tenant", "apply", "-f", str(file), "--config", str(live))
    said += [out, err]
    assert json.loads(out)["secrets"] == {"crm-client": "set"}
    secret = state / "secrets" / "crm-client"
    assert secret.read_text().strip() == canary
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert "secrets" not in json.loads(live.read_text())  # the live file keeps the reference only
    code, out, err = run(capsys, "tenant", "diff", "-f", str(file), "--config", str(live))
    said += [out, err]
    assert code == 0
    assert "secret crm-client: unchanged" in out
    assert all(canary not in text for text in said)


def test_a_bad_file_is_refused_by_the_local_rules_naming_fields(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "tenant.yaml"
    file.write_text(
        "servers:\n  - {name: ok, transport: stdio, command: [sh]}\n  - {name: bad, transport: stdio}\n"
    )
    live = tmp_path / "live.yaml"
    code, _, err = run(capsys, "tenant", "apply", "-f", str(file), "--config", str(live))
    assert code == 2
    assert "servers[1].command: server 'bad': stdio needs a command" in err
    assert not live.exists()
    assert run(capsys, "tenant", "diff", "-f", str(file), "--config", str(live))[0] == 2


def test_the_tenant_and_file_are_asked_for(state: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(capsys, "tenant", "diff", "-f", "x.yaml")[:3:2] == (
        2,
        "foldgate: give the tenant: --tenant T\n",
    )
    assert (
        run(capsys, "tenant", "apply", "--tenant", "acme")[2]
        == "foldgate: give the tenant file: -f tenant.yaml\n"
    )
    code, _, err = run(capsys, "tenant", "apply", "acme", "a.yaml", "--tenant", "other")
    assert code == 2
    assert "once each" in err


def test_apply_records_an_operator_event_naming_secrets_by_verdict_only(
    state: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A change made with `tenant apply` is in the audit trail like one made in the console (actor: the
    local account), with the secret's name and verdict but never its value; a no-op apply records
    nothing."""
    # Loaded here: the activity store is only this test's concern.
    from foldgate.store.activity.base import ActivityQuery
    from foldgate.store.activity.sqlite import SqliteActivityStore

    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("CRM_SECRET", canary)
    file = tmp_path / "tenant.yaml"
    file.write_text(
        "secrets: {crm-client: {from_env: CRM_SECRET}}\n"
        "servers:\n  - name: crm\n    url: http://127.0.0.1:9/mcp\n"
        "    auth: {kind: client_credentials, token_url: 'http://127.0.0.1:9/token', client_id: fg,"
        " client_secret_secret: crm-client}\n"
    )
    live = tmp_path / "live.json"
    code, out, _ = run(capsys, "tenant", "apply", "-f", str(file), "--config", str(live))
    assert code == 0
    tenant = json.loads(out)["tenant"]
    assert run(capsys, "tenant", "apply", "-f", str(file), "--config", str(live))[0] == 0  # no-op
    store = SqliteActivityStore(state / "foldgate.sqlite3")
    try:
        events = store.query(ActivityQuery(tenant=tenant, kind="audit")).records
    finally:
        store.close()
    assert len(events) == 1
    event = events[0]
    assert getattr(event, "action", None) == "config.save"
    assert getattr(event.actor, "via", None) == "cli"
    assert "secret crm-client: set" in event.detail
    assert "document written" in event.detail
    assert canary not in repr(event)
