"""Upstream change triggers end to end, through `foldgate serve` and the official MCP client: a replay
upstream deploys a new tool and calls the signed webhook, and the tool is listed (or held, on an
untrusted server, once its reindex withheld it); a stdio upstream announces its change itself and is
reindexed without any webhook; forged, replayed and stale webhooks are refused with one identical
answer."""

from __future__ import annotations

import hashlib
import hmac
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from mcp import Client

from foldgate.auth.hook_secrets import issue_hook_secret
from foldgate.config.settings import Settings
from tests.procs import REPO, Replay, foldgate_serve, replay

pytestmark = pytest.mark.e2e

CHANGING_STDIO = REPO / "tests" / "upstreams" / "changing_stdio.py"
NEW_TOOL = {
    "name": "archive_contact",
    "description": "Archive a contact so it no longer shows in searches.",
    "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]},
}


# How long a trigger may take to show before the test gives up: the product's figure is ~1 s (the
# coalescer's delay plus one server's listing); the bound is generous so that a loaded machine waits
# longer instead of failing. Timing figures belong to benchmarks, not to assertions.
WITHIN_S = 60.0


@dataclass
class Served:
    base: str
    replay: Replay
    secrets: dict[str, str]
    flag: Path
    store: Path

    def withheld(self) -> dict[str, object]:
        """The tools the current catalog withholds for review, read from the gateway's own store."""
        from foldgate.store.catalog.sqlite import SqliteStore

        store = SqliteStore(str(self.store))
        try:
            catalog = store.load_current("default")
            return dict(catalog.withheld) if catalog is not None else {}
        finally:
            store.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    tmp = tmp_path_factory.mktemp("triggers")
    settings = Settings(sqlite_path=str(tmp / "store.sqlite3"))
    secrets = {s: issue_hook_secret(settings, "default", s) for s in ("crm", "held")}
    flag = tmp / "deployed.flag"
    with replay() as rp:
        servers = [
            {"name": "crm", "url": rp.urls["crm"], "trusted": True},
            {"name": "held", "url": rp.urls["crm"], "trusted": False},
            {
                "name": "changing",
                "transport": "stdio",
                "command": [sys.executable, str(CHANGING_STDIO), str(flag)],
            },
        ]
        # An hour between scheduled runs: anything that changes within the test came from a trigger.
        with foldgate_serve({"servers": servers}, tmp, "--interval", "3600") as base:
            yield Served(base, rp, secrets, flag, tmp / "store.sqlite3")


def post_hook(base: str, server: str, secret: str, body: bytes, ts: int) -> tuple[int, bytes, list[str]]:
    mac = hmac.new(secret.encode(), str(ts).encode() + b"." + body, hashlib.sha256).hexdigest()
    request = urllib.request.Request(
        f"{base}/api/v1/hooks/default/{server}",
        data=body,
        method="POST",
        headers={"X-Foldgate-Timestamp": str(ts), "X-Foldgate-Signature": f"sha256={mac}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as r:
            return r.status, r.read(), []
    except urllib.error.HTTPError as exc:
        # Headers that vary per response by nature (date) are left out of the comparison.
        headers = sorted(f"{k.lower()}: {v}" for k, v in exc.headers.items() if k.lower() != "date")
        return exc.code, exc.read(), headers


async def listed(base: str) -> set[str]:
    async with Client(f"{base}/mcp/all") as client:
        return {t.name for t in (await client.list_tools()).tools}


async def wait_for(base: str, fragment: str, within: float = WITHIN_S) -> float:
    start = time.monotonic()
    while time.monotonic() - start < within:
        if any(fragment in name for name in await listed(base)):
            return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"no tool matching {fragment!r} listed within {within}s")


def wait_until(check: Callable[[], bool], what: str, within: float = WITHIN_S) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"{what}: not within {within}s"
        time.sleep(0.1)


def replace_replay_tools(rp: Replay, slug_url: str, tools: list[dict[str, object]]) -> None:
    slug = slug_url.rstrip("/").rsplit("/", 2)[1]
    request = urllib.request.Request(
        f"{rp.base}/_tools/{slug}", data=json.dumps(tools).encode(), method="PUT"
    )
    with urllib.request.urlopen(request, timeout=5) as r:
        assert r.status == 200


async def test_a_webhook_after_a_deploy_lists_the_new_tool(served: Served) -> None:
    assert not any("archive_contact" in n for n in await listed(served.base))
    current = _crm_tools(served)
    replace_replay_tools(served.replay, served.replay.urls["crm"], [*current, NEW_TOOL])
    status, _, _ = post_hook(
        served.base, "crm", served.secrets["crm"], b'{"event":"deploy"}', int(time.time())
    )
    assert status == 202
    await wait_for(served.base, "archive_contact")
    # The untrusted server lists the same upstream: its new tool waits for an operator, not listed.
    # Its reindex is done once the catalog withholds the tool; only then is "not listed" a finding.
    assert "held:archive_contact" not in served.withheld()
    status, _, _ = post_hook(served.base, "held", served.secrets["held"], b"{}", int(time.time()))
    assert status == 202
    wait_until(lambda: "held:archive_contact" in served.withheld(), "the held server's reindex")
    names = await listed(served.base)
    assert sum("archive_contact" in n for n in names) == 1


def _crm_tools(served: Served) -> list[dict[str, object]]:
    rows = [json.loads(line) for line in (REPO / "demo" / "catalog.jsonl").read_text().splitlines() if line]
    return [{k: v for k, v in r.items() if k != "server"} for r in rows if r["server"] == "crm"]


async def test_a_stdio_upstreams_own_change_notification_reindexes_it_without_a_webhook(
    served: Served,
) -> None:
    assert not any("added_tool" in n for n in await listed(served.base))
    served.flag.touch()
    await wait_for(served.base, "added_tool")


def test_forged_replayed_stale_and_unknown_webhooks_get_one_identical_401(served: Served) -> None:
    now, body, secret = int(time.time()), b'{"event":"deploy"}', served.secrets["crm"]
    accepted = post_hook(served.base, "crm", secret, body, now)
    assert accepted[0] == 202
    refused = {
        "replayed": post_hook(served.base, "crm", secret, body, now),
        "forged": post_hook(served.base, "crm", "f" * 64, body, now),
        "stale": post_hook(served.base, "crm", secret, body, now - 600),
        "unknown server": post_hook(served.base, "nope", secret, body, now),
        "no secret issued": post_hook(served.base, "changing", secret, body, now),
    }
    assert {r[0] for r in refused.values()} == {401}
    assert len({(r[1], tuple(r[2])) for r in refused.values()}) == 1, refused
