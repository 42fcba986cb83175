"""The Connect snippets: one config per client and surface, each in the format that client reads today
(Claude Code's command line, Claude Desktop through ``npx mcp-remote``, Cursor's and VS Code's JSON,
the Python and TypeScript SDKs), carrying the URL and the token (or the placeholder) as data, never as
code or shell syntax."""

from __future__ import annotations

import ast
import json
import shlex

import pytest

from foldgate.edge.console.connect_snippets import PLACEHOLDER, public_base, surface_snippets

BASE = "https://gw.example.com"
TOKEN = "fgt_" + "a" * 40


def by_client(token: str | None = TOKEN, base: str = BASE) -> dict[tuple[str, str], str]:
    return {(s.path, c.client): c.text for s in surface_snippets(base, token) for c in s.snippets}


def test_every_surface_has_every_clients_snippet() -> None:
    surfaces = surface_snippets(BASE, TOKEN)
    assert [s.path for s in surfaces] == ["/mcp/all", "/mcp/call", "/mcp/code"]
    assert [s.url for s in surfaces] == [f"{BASE}/mcp/all", f"{BASE}/mcp/call", f"{BASE}/mcp/code"]
    clients = ["Claude Code", "Claude Desktop", "Cursor", "VS Code", "Python SDK", "TypeScript SDK"]
    assert all([c.client for c in s.snippets] == clients for s in surfaces)
    # Each surface is its own server in a client: names differ so all three can be added side by side.
    assert len({s.name for s in surfaces}) == 3


def test_claude_code_is_one_claude_mcp_add_http_command_with_the_bearer_header() -> None:
    line = by_client()[("/mcp/call", "Claude Code")]
    assert shlex.split(line) == [
        "claude", "mcp", "add", "--transport", "http", "foldgate-search", f"{BASE}/mcp/call",
        "--header", f"Authorization: Bearer {TOKEN}",
    ]  # fmt: skip


def test_claude_desktop_reaches_the_remote_server_through_npx_mcp_remote_with_the_token_in_env() -> None:
    doc = json.loads(by_client()[("/mcp/all", "Claude Desktop")])
    server = doc["mcpServers"]["foldgate"]
    assert server["command"] == "npx"
    header = "Authorization:${AUTH_HEADER}"
    assert server["args"] == ["-y", "mcp-remote", f"{BASE}/mcp/all", "--header", header]
    assert server["env"] == {"AUTH_HEADER": f"Bearer {TOKEN}"}


def test_claude_desktop_allows_plain_http_only_when_the_url_is_http() -> None:
    doc = json.loads(by_client(base="http://127.0.0.1:8080")[("/mcp/all", "Claude Desktop")])
    assert doc["mcpServers"]["foldgate"]["args"][-1] == "--allow-http"


def test_cursor_and_vscode_json_name_the_url_and_the_authorization_header() -> None:
    snippets = by_client()
    cursor = json.loads(snippets[("/mcp/code", "Cursor")])
    assert cursor == {
        "mcpServers": {
            "foldgate-code": {"url": f"{BASE}/mcp/code", "headers": {"Authorization": f"Bearer {TOKEN}"}}
        }
    }
    vscode = json.loads(snippets[("/mcp/code", "VS Code")])
    assert vscode == {
        "servers": {
            "foldgate-code": {
                "type": "http",
                "url": f"{BASE}/mcp/code",
                "headers": {"Authorization": f"Bearer {TOKEN}"},
            }
        }
    }


def test_the_sdk_snippets_use_the_streamable_http_clients_with_the_bearer_header() -> None:
    snippets = by_client()
    python = snippets[("/mcp/all", "Python SDK")]
    tree = ast.parse(python)  # valid Python
    assigned = {
        n.targets[0].id: n.value.value  # type: ignore[attr-defined]
        for n in tree.body
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant)
    }
    assert assigned == {"URL": f"{BASE}/mcp/all", "TOKEN": TOKEN}
    assert "streamable_http_client(URL, http_client=http)" in python
    typescript = snippets[("/mcp/all", "TypeScript SDK")]
    assert f'new StreamableHTTPClientTransport(new URL("{BASE}/mcp/all")' in typescript
    assert f'Authorization: "Bearer {TOKEN}"' in typescript


def test_without_a_token_every_snippet_carries_the_placeholder_and_no_secret() -> None:
    for text in by_client(None).values():
        assert PLACEHOLDER in text
        assert "fgt_" not in text


@pytest.mark.parametrize(
    "base", ["https://gw.example.com/x'; rm -rf ~; echo '", 'https://gw.example.com/"+x+"']
)
def test_a_hostile_url_stays_data_in_every_snippet(base: str) -> None:
    snippets = by_client(base=base)
    assert shlex.split(snippets[("/mcp/all", "Claude Code")])[6] == f"{base}/mcp/all"
    assert json.loads(snippets[("/mcp/all", "Cursor")])["mcpServers"]["foldgate"]["url"] == f"{base}/mcp/all"
    tree = ast.parse(snippets[("/mcp/all", "Python SDK")])
    urls = [n.value.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "URL"]  # type: ignore[attr-defined]
    assert urls == [f"{base}/mcp/all"]
    assert f"new URL({json.dumps(base + '/mcp/all')})" in snippets[("/mcp/all", "TypeScript SDK")]


def test_the_public_base_is_the_configured_url_else_the_consoles_origin() -> None:
    assert public_base("https://mcp.example.com/", "http", "127.0.0.1:8080") == "https://mcp.example.com"
    assert public_base("https://tunnel.example.com/gw/", "http", "x") == "https://tunnel.example.com/gw"
    assert public_base(None, "http", "127.0.0.1:8080") == "http://127.0.0.1:8080"
    # Not a URL: the origin the operator reached the console at instead.
    assert public_base("javascript:alert(1)", "https", "gw.example.com") == "https://gw.example.com"
