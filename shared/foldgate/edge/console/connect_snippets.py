"""Ready-to-paste client configs for each agent surface (``/mcp/all``, ``/mcp/call``, ``/mcp/code``):
Claude Code's command line, the JSON of Claude Desktop (through ``npx mcp-remote``, its bridge to remote
servers), Cursor and VS Code, and the Python and TypeScript SDKs.

Pure text: no request, store or secret is read here. The Connect page passes :data:`PLACEHOLDER`; only
the page that has just created a token passes the token itself (it is shown there once and never
again). Every value that reaches a shell line is quoted for POSIX shells, and every value that reaches
JSON, Python or TypeScript is written as a string literal of that language, so a base URL or server name
with quotes or spaces in it stays data.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import Final
from urllib.parse import urlsplit

__all__ = ["PLACEHOLDER", "SURFACES", "Snippet", "SurfaceSnippets", "public_base", "surface_snippets"]

PLACEHOLDER: Final = "<YOUR_AGENT_TOKEN>"

# (path, name the client knows the server by, what an agent gets there).
SURFACES: Final[tuple[tuple[str, str, str], ...]] = (
    ("/mcp/all", "foldgate", "every tool listed (large schemas deferred, describe_tool for the rest)"),
    ("/mcp/call", "foldgate-search", "retrieve_tools to search the fleet, call_tool_<tier> to call"),
    ("/mcp/code", "foldgate-code", "one run_code tool: agent code calls the fleet in a sandbox"),
)


@dataclass(frozen=True, slots=True)
class Snippet:
    """One client's config: ``client`` (its name), ``where`` (the file or place it goes), ``text``."""

    client: str
    where: str
    language: str
    text: str


@dataclass(frozen=True, slots=True)
class SurfaceSnippets:
    """Every client's config for one surface."""

    path: str
    name: str
    about: str
    url: str
    snippets: tuple[Snippet, ...]


def public_base(configured: str | None, scheme: str, netloc: str) -> str:
    """The base URL agents reach this instance at: the configured public URL (``FOLDGATE_PUBLIC_URL``)
    when there is one, else the origin the operator's browser reached the console at."""
    if configured:
        parts = urlsplit(configured.strip())
        if parts.scheme in ("http", "https") and parts.netloc:
            return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"
    return f"{scheme}://{netloc}"


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _claude_code(name: str, url: str, token: str) -> str:
    header = f"Authorization: Bearer {token}"
    quoted = " ".join(shlex.quote(part) for part in (name, url, "--header", header))
    return f"claude mcp add --transport http {quoted}"


def _claude_desktop(name: str, url: str, token: str) -> str:
    # The token travels in an environment variable: mcp-remote reads the header from its arguments,
    # where a space would be split on some platforms (its README's recommended form).
    args = ["-y", "mcp-remote", url, "--header", "Authorization:${AUTH_HEADER}"]
    if urlsplit(url).scheme == "http":
        args.append("--allow-http")  # mcp-remote refuses plain http to anything but localhost without it
    server = {"command": "npx", "args": args, "env": {"AUTH_HEADER": f"Bearer {token}"}}
    return _json({"mcpServers": {name: server}})


def _cursor(name: str, url: str, token: str) -> str:
    return _json({"mcpServers": {name: {"url": url, "headers": {"Authorization": f"Bearer {token}"}}}})


def _vscode(name: str, url: str, token: str) -> str:
    server = {"type": "http", "url": url, "headers": {"Authorization": f"Bearer {token}"}}
    return _json({"servers": {name: server}})


def _python(url: str, token: str) -> str:
    return f"""# pip install "mcp>=2.3"
import asyncio

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

URL = {json.dumps(url)}
TOKEN = {json.dumps(token)}


async def main() -> None:
    headers = {{"Authorization": f"Bearer {{TOKEN}}"}}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        Client(streamable_http_client(URL, http_client=http)) as client,
    ):
        tools = await client.list_tools()
        print([tool.name for tool in tools.tools])


asyncio.run(main())
"""


def _typescript(url: str, token: str) -> str:
    return f"""// npm install @modelcontextprotocol/sdk
import {{ Client }} from "@modelcontextprotocol/sdk/client/index.js";
import {{ StreamableHTTPClientTransport }} from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const transport = new StreamableHTTPClientTransport(new URL({json.dumps(url)}), {{
  requestInit: {{ headers: {{ Authorization: {json.dumps("Bearer " + token)} }} }},
}});
const client = new Client({{ name: "my-agent", version: "1.0.0" }});
await client.connect(transport);
const {{ tools }} = await client.listTools();
console.log(tools.map((tool) => tool.name));
await client.close();
"""


def surface_snippets(base_url: str, token: str | None = None) -> list[SurfaceSnippets]:
    """Every client's config for every surface at ``base_url``, carrying ``token`` (None: the
    :data:`PLACEHOLDER` the operator replaces with a token of their own)."""
    secret = token if token else PLACEHOLDER
    base = base_url.rstrip("/")
    out = []
    for path, name, about in SURFACES:
        url = base + path
        snippets = (
            Snippet("Claude Code", "a terminal", "shell", _claude_code(name, url, secret)),
            Snippet(
                "Claude Desktop",
                "claude_desktop_config.json (Settings → Developer → Edit Config); needs Node.js for npx",
                "json",
                _claude_desktop(name, url, secret),
            ),
            Snippet("Cursor", "~/.cursor/mcp.json or .cursor/mcp.json", "json", _cursor(name, url, secret)),
            Snippet("VS Code", ".vscode/mcp.json", "json", _vscode(name, url, secret)),
            Snippet("Python SDK", "a .py file", "python", _python(url, secret)),
            Snippet("TypeScript SDK", "an .mjs or .ts module", "typescript", _typescript(url, secret)),
        )
        out.append(SurfaceSnippets(path, name, about, url, snippets))
    return out
