"""`foldgate tenant diff | apply | export` against the cloud's two config sources on moto_server: the
table (default) and Parameter Store's one-parameter-per-server layout (FOLDGATE_CONFIG_SOURCE=ssm).

Every tenant config file the tests keep and the demo's config round-trip (apply, the readers serve it,
export gives back an equivalent document, applying the export changes nothing); secrets named in a
file go to SecureString parameters, are written only when they change and are never printed; a bad
file names its fields and writes nothing."""

from __future__ import annotations

import json
import logging
import uuid
from pathlib import Path
from typing import Any

import boto3
import pytest
import yaml

from foldgate.app.cli import main
from foldgate.app.wiring import open_configs
from foldgate.config.cloud import parse_cloud_config, tenant_path
from foldgate.config.settings import Settings
from foldgate.config.tenant import read_config_document
from foldgate.model.jsonutil import canonical
from tests.tenant_files import cloud_part, demo_config, tenant_files


@pytest.fixture(params=["table", "ssm"])
def source(request: pytest.FixtureRequest, moto_endpoint: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The stack's config source, on moto: the table (FOLDGATE_STORE=dynamodb) or Parameter Store."""
    prefix = f"/fg-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("FOLDGATE_CONFIG_PREFIX", prefix)
    monkeypatch.delenv("FOLDGATE_INDEXER_FUNCTION", raising=False)
    if request.param == "table":
        monkeypatch.setenv("FOLDGATE_CONFIG_SOURCE", "table")
        monkeypatch.setenv("FOLDGATE_STORE", "dynamodb")
        monkeypatch.setenv("FOLDGATE_TABLE_NAME", request.getfixturevalue("dynamo_table"))
    else:
        monkeypatch.setenv("FOLDGATE_CONFIG_SOURCE", "ssm")
        monkeypatch.delenv("FOLDGATE_STORE", raising=False)
    return prefix


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def by_name(doc: dict[str, Any]) -> str:
    """The document's canonical JSON, servers in name order (the Parameter Store layout's order)."""
    return canonical({**doc, "servers": sorted(doc.get("servers") or [], key=lambda s: s["name"])})


def corpus(tmp_path: Path) -> list[Path]:
    return [*tenant_files(), demo_config(tmp_path)]


def test_the_corpus_has_the_kept_files_and_the_demo(tmp_path: Path) -> None:
    """The round trip below covers real files: the ones under tests/data/tenants and the demo's."""
    names = [p.name for p in corpus(tmp_path)]
    assert {"every_setting.yaml", "upstream_auth.yaml", "inbound_oauth.yaml", "foldgate.yaml"} <= set(names)


@pytest.mark.parametrize("index", range(len(tenant_files()) + 1))
def test_apply_round_trips_every_tenant_config_and_export_gives_it_back(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], index: int
) -> None:
    """apply -> the readers serve exactly the file's config -> export is the same document -> applying
    the export (or the file again) writes nothing and diffs to nothing."""
    original = corpus(tmp_path)[index]
    doc = cloud_part(read_config_document(original))
    file = tmp_path / "tenant.json"
    file.write_text(json.dumps(doc))

    code, out, _ = run(capsys, "tenant", "apply", "--tenant", "acme", "-f", str(file))
    assert code == 0, original
    assert json.loads(out)["written"] is True

    settings = Settings.from_env()
    served = open_configs(settings).get("acme", force=True)
    expected = parse_cloud_config(doc, tenant_path(settings.config_prefix, "acme"))
    assert by_name(served.model_dump()) == by_name(expected.model_dump())  # the ssm layout: name order

    code, exported, _ = run(capsys, "tenant", "export", "--tenant", "acme")
    assert code == 0
    assert by_name(yaml.safe_load(exported)) == by_name(doc)
    code, as_json, _ = run(capsys, "tenant", "export", "acme", "--format", "json")
    assert by_name(json.loads(as_json)) == by_name(doc)

    again = tmp_path / "exported.yaml"
    again.write_text(exported)
    assert run(capsys, "tenant", "diff", "--tenant", "acme", "-f", str(again))[:2] == (0, "")
    code, out, _ = run(capsys, "tenant", "apply", "--tenant", "acme", "-f", str(again))
    assert (code, json.loads(out)["written"]) == (0, False)
    code, out, _ = run(capsys, "tenant", "apply", "acme", str(file))  # the positional form
    assert (code, json.loads(out)["written"]) == (0, False)


def test_diff_shows_a_readable_unified_diff_and_exits_like_diff(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "acme.yaml"
    file.write_text("tools_limit: 50\nservers:\n  - {name: a, url: 'https://a.example/mcp'}\n")
    code, out, _ = run(capsys, "tenant", "diff", "--tenant", "acme", "-f", str(file))
    assert code == 1
    assert "(none)" in out.splitlines()[0]
    assert "+tools_limit: 50" in out
    assert run(capsys, "tenant", "apply", "--tenant", "acme", "-f", str(file))[0] == 0

    file.write_text("tools_limit: 20\nservers:\n  - {name: a, url: 'https://a.example/mcp', timeout_s: 5}\n")
    code, out, _ = run(capsys, "tenant", "diff", "--tenant", "acme", "-f", str(file))
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("--- stored: ")
    assert lines[1] == f"+++ {file}"
    assert {"-tools_limit: 50", "+tools_limit: 20", "+  timeout_s: 5"} <= set(lines)
    assert run(capsys, "tenant", "diff", "--tenant", "acme", "-f", str(file))[0] == 1  # diff writes nothing


def test_secrets_go_to_securestrings_only_when_changed_and_are_never_printed(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.DEBUG, logger="foldgate")  # ours (botocore logs request bodies at DEBUG)
    canary = f"ghp_canary{uuid.uuid4().hex}"
    file_canary = f"client-canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("GH_HEADERS", json.dumps({"Authorization": f"Bearer {canary}"}))
    (tmp_path / "crm.secret").write_text(file_canary + "\n")
    file = tmp_path / "acme.yaml"
    file.write_text(
        "secrets:\n  github: {from_env: GH_HEADERS}\n  crm-client: {from_file: crm.secret}\n"
        "servers:\n  - {name: github, url: 'https://gh.example/mcp', headers_secret: github}\n"
        "  - name: crm\n    url: https://crm.example/mcp\n"
        "    auth: {kind: client_credentials, token_url: 'https://crm.example/token', client_id: fg,"
        " client_secret_secret: crm-client}\n"
    )
    prefix = source
    ssm = boto3.client("ssm")
    gh, crm = f"{prefix}/tenants/acme/secrets/github", f"{prefix}/tenants/acme/secrets/crm-client"
    said: list[str] = []

    def cli(*argv: str) -> tuple[int, str]:
        code, out, err = run(capsys, *argv)
        said.extend([out, err])
        return code, out

    code, out = cli("tenant", "diff", "--tenant", "acme", "-f", str(file))
    assert code == 1
    assert f"secret github: will be set ({gh}, used by servers[0].headers_secret, from env GH_HEADERS)" in out
    assert (
        f"secret crm-client: will be set ({crm}, used by servers[1].auth.client_secret_secret, "
        f"from file {tmp_path.resolve() / 'crm.secret'})"
    ) in out

    code, out = cli("tenant", "apply", "--tenant", "acme", "-f", str(file))
    assert (code, json.loads(out)["secrets"]) == (0, {"crm-client": "set", "github": "set"})
    for name, value in ((gh, json.dumps({"Authorization": f"Bearer {canary}"})), (crm, file_canary)):
        param = ssm.get_parameter(Name=name, WithDecryption=True)["Parameter"]
        assert (param["Type"], param["Value"], param["Version"]) == ("SecureString", value, 1)
    code, exported = cli("tenant", "export", "--tenant", "acme")
    assert "secrets" not in yaml.safe_load(exported)  # references only: headers_secret: github
    servers = {s["name"]: s for s in yaml.safe_load(exported)["servers"]}
    assert servers["github"]["headers_secret"] == "github"

    code, out = cli("tenant", "apply", "--tenant", "acme", "-f", str(file))
    assert json.loads(out)["secrets"] == {"crm-client": "unchanged", "github": "unchanged"}
    assert ssm.get_parameter(Name=gh)["Parameter"]["Version"] == 1  # not written again
    assert cli("tenant", "diff", "--tenant", "acme", "-f", str(file))[0] == 0

    monkeypatch.setenv("GH_HEADERS", json.dumps({"Authorization": "Bearer rotated-canary"}))
    code, out = cli("tenant", "diff", "--tenant", "acme", "-f", str(file))
    assert code == 1
    assert "secret github: will be changed" in out
    assert "secret crm-client: unchanged" in out
    code, out = cli("tenant", "apply", "--tenant", "acme", "-f", str(file))
    assert json.loads(out)["secrets"]["github"] == "changed"
    assert ssm.get_parameter(Name=gh)["Parameter"]["Version"] == 2

    told = "\n".join([*said, caplog.text])
    for value in (canary, file_canary, "rotated-canary"):
        assert value not in told


def test_a_bad_file_names_its_fields_and_writes_nothing(
    source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GH_HEADERS", "not-json-canary")
    file = tmp_path / "acme.yaml"
    file.write_text(
        "secrets: {github: {from_env: GH_HEADERS}, bad: {from_env: X, from_file: y}}\n"
        "tools_limit: 0\n"
        "servers:\n  - {name: gh, url: 'https://gh.example/mcp', headers_secret: github}\n"
        "  - {name: web, url: 'ftp://web.example'}\n"
    )
    code, _, err = run(capsys, "tenant", "apply", "--tenant", "acme", "-f", str(file))
    assert code == 2
    assert "secrets.bad: give exactly one of from_env and from_file" in err
    assert "tools_limit: Input should be greater than or equal to 1" in err
    assert "servers[1].url:" in err

    file.write_text(
        "servers:\n  - {name: sh, transport: stdio, command: [sh]}\n"
        "  - {name: gh, url: 'https://gh.example/mcp', headers_secret: /foldgate/secrets/operator-key}\n"
    )
    code, _, err = run(capsys, "tenant", "diff", "--tenant", "acme", "-f", str(file))
    assert code == 2
    assert "servers[0].transport: 'stdio' runs a program" in err
    assert "servers[1].headers_secret: must name a parameter under" in err

    # A headers secret must be a JSON object of headers; what it is instead is never shown.
    file.write_text(
        "secrets: {github: {from_env: GH_HEADERS}}\n"
        "servers:\n  - {name: gh, url: 'https://gh.example/mcp', headers_secret: github}\n"
    )
    code, out, err = run(capsys, "tenant", "apply", "--tenant", "acme", "-f", str(file))
    assert code == 2
    assert "secrets.github: servers[0].headers_secret needs a JSON object" in err
    assert "canary" not in out + err

    assert run(capsys, "tenant", "export", "--tenant", "acme")[0] == 1  # nothing was written
    with pytest.raises(boto3.client("ssm").exceptions.ParameterNotFound):
        boto3.client("ssm").get_parameter(Name=f"{source}/tenants/acme/secrets/github")


def test_the_parameter_store_layout_is_one_parameter_per_server_and_removed_servers_go(
    moto_endpoint: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = f"/fg-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("FOLDGATE_CONFIG_PREFIX", prefix)
    monkeypatch.setenv("FOLDGATE_CONFIG_SOURCE", "ssm")
    monkeypatch.delenv("FOLDGATE_INDEXER_FUNCTION", raising=False)
    ssm = boto3.client("ssm")
    base = f"{prefix}/tenants/acme"
    file = tmp_path / "acme.yaml"
    file.write_text(
        "routing_mode: direct\nservers:\n  - {name: b, url: 'https://b.example/mcp'}\n"
        "  - {name: a, url: 'https://a.example/mcp', timeout_s: 5}\n"
    )
    assert main(["tenant", "apply", "--tenant", "acme", "-f", str(file)]) == 0

    def values() -> dict[str, Any]:
        pages = ssm.get_paginator("get_parameters_by_path").paginate(Path=base, Recursive=True)
        return {p["Name"][len(base) :]: json.loads(p["Value"]) for page in pages for p in page["Parameters"]}

    assert values() == {
        "/config": {"routing_mode": "direct"},
        "/servers/a": {"url": "https://a.example/mcp", "timeout_s": 5},
        "/servers/b": {"url": "https://b.example/mcp"},
    }
    file.write_text(
        "routing_mode: direct\nservers:\n  - {name: a, url: 'https://a.example/mcp', timeout_s: 5}\n"
    )
    version = ssm.get_parameter(Name=f"{base}/servers/a")["Parameter"]["Version"]
    assert main(["tenant", "apply", "--tenant", "acme", "-f", str(file)]) == 0
    capsys.readouterr()
    assert set(values()) == {"/config", "/servers/a"}
    assert ssm.get_parameter(Name=f"{base}/servers/a")["Parameter"]["Version"] == version  # unchanged
