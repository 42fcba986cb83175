"""``SecretStore: table`` on moto_server: ``foldgate tenant apply`` seals a header secret in the table under
the stack's KMS key (no parameter written, no value in the item or any output), the indexer lists the
upstream with the opened header, and a call carries it; ``foldgate tenant migrate-secrets`` moves a
SecureString into the table."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from pathlib import Path
from typing import Any

import boto3
import httpx2
import pytest

from foldgate.app.cli import main
from foldgate.app.wiring import open_configs, open_sealed_secrets, open_store, open_upstream
from foldgate.config.settings import Settings
from foldgate.index.indexer import Indexer
from foldgate.upstream import client as upstream_client
from foldgate.upstream import pool


@pytest.fixture
def sealed_env(moto_endpoint: str, dynamo_table: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    key = boto3.client("kms").create_key(KeySpec="SYMMETRIC_DEFAULT", KeyUsage="ENCRYPT_DECRYPT")
    env = {
        "FOLDGATE_CONFIG_PREFIX": f"/fg-{uuid.uuid4().hex[:10]}",
        "FOLDGATE_CONFIG_SOURCE": "table",
        "FOLDGATE_STORE": "dynamodb",
        "FOLDGATE_TABLE_NAME": dynamo_table,
        "FOLDGATE_SECRET_STORE": "table",
        "FOLDGATE_GRANT_KMS_KEY_ID": str(key["KeyMetadata"]["KeyId"]),
        "FOLDGATE_EMBEDDING_PROVIDER": "none",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("FOLDGATE_INDEXER_FUNCTION", raising=False)
    return env


class Upstream:
    """An MCP upstream (handshake era) that answers only requests carrying ``Authorization: <wanted>``."""

    def __init__(self, wanted: str) -> None:
        self.wanted = wanted
        self.refused = 0
        self.calls = 0

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        if request.headers.get("authorization") != self.wanted:
            self.refused += 1
            return httpx2.Response(401)
        msg = json.loads(request.content) if request.content else {}
        method = msg.get("method")
        if method == "server/discover":
            return httpx2.Response(404)
        if "id" not in msg:
            return httpx2.Response(202)
        results: dict[str, Any] = {
            "initialize": {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}},
            "tools/list": {"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]},
            "tools/call": {"content": [{"type": "text", "text": "you are acme"}]},
        }
        if method == "tools/call":
            self.calls += 1
        headers = {"mcp-session-id": "s1"} if method == "initialize" else {}
        body = {"jsonrpc": "2.0", "id": msg["id"], "result": results[method]}
        return httpx2.Response(200, json=body, headers=headers)


def test_a_header_secret_sealed_in_the_table_reaches_the_indexer_and_a_call(
    sealed_env: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="foldgate")
    canary = f"ghp_canary{uuid.uuid4().hex}"
    monkeypatch.setenv("GH_HEADERS", json.dumps({"Authorization": f"Bearer {canary}"}))
    file = tmp_path / "acme.yaml"
    file.write_text(
        "secrets:\n  github: {from_env: GH_HEADERS}\n"
        "servers:\n  - {name: github, url: 'https://gh.example/mcp', headers_secret: github}\n"
    )
    assert main(["tenant", "apply", "--tenant", "acme", "-f", str(file)]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["secrets"] == {"github": "set"}
    name = f"{sealed_env['FOLDGATE_CONFIG_PREFIX']}/tenants/acme/secrets/github"
    item = boto3.client("dynamodb").get_item(
        TableName=sealed_env["FOLDGATE_TABLE_NAME"],
        Key={"pk": {"S": f"SECRET#{name}"}, "sk": {"S": "SECRET"}},
    )["Item"]
    assert canary.encode() not in item["sealed"]["B"]
    with pytest.raises(boto3.client("ssm").exceptions.ParameterNotFound):
        boto3.client("ssm").get_parameter(Name=name)
    # Applied again: unchanged (compared with the opened value), nothing written.
    assert main(["tenant", "apply", "--tenant", "acme", "-f", str(file)]) == 0
    again, _ = capsys.readouterr()
    assert json.loads(again)["secrets"] == {"github": "unchanged"}

    upstream = Upstream(f"Bearer {canary}")

    def client(headers: Any, **_: Any) -> httpx2.AsyncClient:
        return httpx2.AsyncClient(headers=dict(headers), transport=httpx2.MockTransport(upstream.handle))

    async def no_dns(url: str, *, allow_private: bool) -> None:
        return None  # gh.example resolves nowhere offline; the guard has tests of its own

    monkeypatch.setattr(pool, "session_http_client", client)
    monkeypatch.setattr(upstream_client, "check_upstream_url_async", no_dns)
    settings = Settings.from_env()
    config = open_configs(settings).get("acme")
    server = config.server("github")
    assert server is not None
    assert server.headers_secret == name

    async def index_and_call() -> dict[str, Any]:
        caller = open_upstream(settings)
        try:
            report = await Indexer(open_store(settings), caller).index_tenant("acme", config)
            assert report.changed, report.servers
            result: dict[str, Any] = await caller.call_tool(server, "whoami", {})
            return result
        finally:
            await caller.aclose()

    result = asyncio.run(index_and_call())
    assert result["content"][0]["text"] == "you are acme"
    assert (upstream.calls, upstream.refused) == (1, 0)
    catalog = open_store(settings).load_current("acme")
    assert catalog is not None
    assert [(t.server, t.tool.name) for t in catalog.tools] == [("github", "whoami")]
    told = "\n".join([out, err, again, caplog.text])
    assert canary not in told


def test_migrate_secrets_moves_securestrings_into_the_table_and_never_prints_them(
    sealed_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    ssm = boto3.client("ssm")
    base = f"{sealed_env['FOLDGATE_CONFIG_PREFIX']}/tenants"
    canary = f"canary-{uuid.uuid4().hex}"
    ssm.put_parameter(Name=f"{base}/acme/secrets/github", Value=canary, Type="SecureString")
    ssm.put_parameter(Name=f"{base}/beta/secrets/crm", Value=canary + "-b", Type="SecureString")
    ssm.put_parameter(Name=f"{base}/acme/config", Value="{}", Type="String")  # not a secret
    assert main(["tenant", "migrate-secrets", "--tenant", "acme", "--dry-run"]) == 0
    dry = json.loads(capsys.readouterr().out)["secrets"]
    assert dry == {f"{base}/acme/secrets/github": "would move"}
    assert main(["tenant", "migrate-secrets", "--tenant", "acme"]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["secrets"] == {f"{base}/acme/secrets/github": "moved"}
    assert main(["tenant", "migrate-secrets", "--delete"]) == 0
    last = capsys.readouterr().out
    assert json.loads(last)["secrets"] == {
        f"{base}/acme/secrets/github": "unchanged, parameter deleted",
        f"{base}/beta/secrets/crm": "moved, parameter deleted",
    }
    sealed = open_sealed_secrets(Settings.from_env())
    assert sealed.get(f"{base}/acme/secrets/github") == canary
    assert sealed.get(f"{base}/beta/secrets/crm") == canary + "-b"
    with pytest.raises(ssm.exceptions.ParameterNotFound):
        ssm.get_parameter(Name=f"{base}/acme/secrets/github")
    for said in (out, last, json.dumps(dry)):
        assert canary not in said
