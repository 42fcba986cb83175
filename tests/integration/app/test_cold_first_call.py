"""A cold McpFunction's first proxied call never imports the MCP SDK, nor what only operators use (the
console's pages and Jinja2, the grant cipher's cryptography bindings).

A fresh Python process imports the Lambda app (functions/mcp/app.py), answers ``initialize`` and one
proxied ``tools/call`` through Mangum against a real upstream, and reports which SDK modules it loaded:
server-everything (handshake era, stateful sessions) and the replay upstream (2026-07-28, stateless).
The upstream side of the call (``upstream/plain_session.py``) is the one that must not load it.
Importing ``mcp`` there costs a cold start more than everything else it does (``foldgate bench call``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from foldgate.dev.bench.call_procs import index_once
from tests.procs import REPO, replay

_CHILD = """
import json, runpy, sys
handler = runpy.run_path({app!r})["handler"]
bodies = []
for event in json.load(open({events!r})):
    reply = handler(event, None)
    assert reply["statusCode"] == 200, reply
    bodies.append(json.loads(reply["body"]))
sdk = sorted(m for m in sys.modules if m == "mcp" or m.startswith(("mcp.", "mcp_types")))
operator_only = sorted(
    m for m in ("jinja2", "cryptography", "foldgate.edge.console.routes") if m in sys.modules
)
print(json.dumps({{"bodies": bodies, "sdk": sdk, "operator_only": operator_only}}))
"""


def _event(name: str, body: dict[str, Any]) -> dict[str, Any]:
    event: dict[str, Any] = json.loads((REPO / "events" / name).read_text())
    event["body"] = json.dumps(body)
    event["headers"]["content-length"] = str(len(event["body"]))
    return event


def _first_call(tmp: Path, server: dict[str, str], tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    config, db, events = tmp / "foldgate.json", tmp / "store.sqlite3", tmp / "events.json"
    config.write_text(json.dumps({"servers": [server]}))
    env = {**os.environ, "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "true"}
    index_once(config, db, env)
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    call = {"name": tool, "arguments": arguments}
    events.write_text(
        json.dumps(
            [
                _event(
                    "mcp_initialize.json",
                    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
                ),
                _event(
                    "mcp_tools_call.json", {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
                ),
            ]
        )
    )
    child_env = {**env, "FOLDGATE_CONFIG_FILE": str(config), "FOLDGATE_SQLITE_PATH": str(db)}
    code = _CHILD.format(app=str(REPO / "functions" / "mcp" / "app.py"), events=str(events))
    done = subprocess.run(
        [sys.executable, "-c", code], env=child_env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def test_a_handshake_era_first_call_loads_no_sdk(tmp_path: Path, everything_url: str) -> None:
    out = _first_call(
        tmp_path, {"name": "everything", "url": everything_url}, "everything__echo", {"message": "c"}
    )
    assert out["bodies"][1]["result"]["content"] == [{"type": "text", "text": "Echo: c"}]
    assert out["sdk"] == []
    assert out["operator_only"] == []


def test_a_stateless_era_first_call_loads_no_sdk(tmp_path: Path) -> None:
    with replay() as rp:
        out = _first_call(
            tmp_path, {"name": "crm", "url": rp.urls["crm"]}, "crm__find_contact", {"query": "ada"}
        )
        assert [c["tool"] for c in rp.calls()] == ["find_contact"]
    result = out["bodies"][1]["result"]
    assert result["isError"] is False
    assert result["content"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "crm"  # the upstream's stamp
    assert out["sdk"] == []
