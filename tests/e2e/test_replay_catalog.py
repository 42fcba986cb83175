"""End to end on a real 527-tool catalog (LiveMCPBench, 70 servers) replayed over HTTP: every tool is
listed deferred under a valid name, and calls built from flat signatures alone are accepted upstream."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any

import pytest
import yaml
from mcp import Client

from foldgate.dev.corpus import load_catalog
from foldgate.dev.procs import free_port, stop_process
from tests.conftest import corpus_path
from tests.helpers import VALUE_KEYWORDS, example_value, full_example, parse_params
from tests.procs import Replay, replay, wait_http

pytestmark = [pytest.mark.e2e, pytest.mark.corpus]


def _server_name(slug: str, taken: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9-]+", "-", slug).strip("-")[:20] or "s"
    name, n = base, 1
    while name in taken:
        n += 1
        name = f"{base[:17]}-{n}"
    taken.add(name)
    return name


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str], Replay]]:
    catalog = corpus_path("mcpproxy", "livemcptool_snapshot", "tools.json")
    tmp = tmp_path_factory.mktemp("replay527")
    with ExitStack() as stack:
        rp = stack.enter_context(replay(catalog))
        taken: set[str] = set()
        names = {server: _server_name(url.rsplit("/", 2)[1], taken) for server, url in rp.urls.items()}
        config = {
            "direct_tool_response_mode": "deferred",
            "servers": [{"name": names[s], "url": url} for s, url in rp.urls.items()],
        }
        path = tmp / "foldgate.yaml"
        path.write_text(yaml.safe_dump(config))
        port = free_port()
        env = {**os.environ, "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3")}
        cmd = [sys.executable, "-m", "foldgate.app.cli", "serve", "--config", str(path), "--port", str(port)]
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        stack.callback(stop_process, proc)
        wait_http(f"http://127.0.0.1:{port}/healthz", timeout=90)
        yield f"http://127.0.0.1:{port}/mcp/all", names, rp


def _has_value_keywords(node: Any) -> bool:
    if isinstance(node, dict):
        return bool(VALUE_KEYWORDS & set(node)) or any(_has_value_keywords(v) for v in node.values())
    if isinstance(node, list):
        return any(_has_value_keywords(v) for v in node)
    return False


async def test_every_tool_is_listed_deferred_under_a_valid_name(
    gateway: tuple[str, dict[str, str], Replay],
) -> None:
    url, _, _ = gateway
    async with Client(url) as client:
        page = await client.list_tools()
    assert page.next_cursor is None
    upstream = [t for t in page.tools if t.name != "describe_tool"]
    assert len(upstream) == 527
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", t.name) for t in page.tools)
    assert all(t.input_schema == {"type": "object"} for t in upstream)


async def test_calls_built_from_flat_signatures_alone_are_accepted(
    gateway: tuple[str, dict[str, str], Replay],
) -> None:
    url, names, rp = gateway
    tools = [t for t in load_catalog(corpus_path("mcpproxy", "livemcptool_snapshot", "tools.json"))
             if not t.signature.lossy and not _has_value_keywords(t.input_schema)]  # fmt: skip
    sample = tools[:: max(1, len(tools) // 40)][:40]
    assert len(sample) >= 30
    # Every tool whose signature writes an object inline (grammar v2), with full inline objects too.
    inline = [t for t in tools if ":{" in t.signature.params or ":[{" in t.signature.params]
    assert len(inline) >= 10
    sample += [t for t in inline if t not in sample]
    rp.clear()
    async with Client(url) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        for tool in sample:
            published = next(
                n for n, t in listed.items() if n.startswith(names[tool.server] + "__") and
                t.description.endswith("\n" + tool.name + tool.signature.params)
            )  # fmt: skip
            # An inline object is sent with every member it lists (sigcheck covers required-only ones).
            args = {
                name: full_example(typ) if typ.startswith(("{", "[{")) else example_value(typ)
                for name, req, _, typ in parse_params(tool.signature.params)
                if req
            }
            result = await client.call_tool(published, args)
            assert not result.is_error, (published, args, result.content[0])
    assert len(rp.calls()) == len(sample)
    assert all(c["valid"] for c in rp.calls())
