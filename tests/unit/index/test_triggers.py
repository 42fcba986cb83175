"""The cloud change trigger: one async invoke of the IndexerFunction per server per window, with the
server reindex event; a failed invoke does not block the next ping."""

from __future__ import annotations

import json
from typing import Any

from foldgate.index.triggers import lambda_server_trigger


class Lambda:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.invokes: list[dict[str, Any]] = []

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        if self.fail:
            raise RuntimeError("throttled")
        self.invokes.append({**kwargs, "Payload": json.loads(kwargs["Payload"])})
        return {"StatusCode": 202}


async def test_one_invoke_per_server_per_window() -> None:
    client, now = Lambda(), [0.0]
    trigger = lambda_server_trigger("Indexer", client=client, window_s=2.0, clock=lambda: now[0])
    for _ in range(100):
        await trigger("acme", "crm")
    await trigger("acme", "mail")
    now[0] = 2.5
    await trigger("acme", "crm")
    assert [i["Payload"] for i in client.invokes] == [
        {"action": "reindex", "tenant": "acme", "server": "crm"},
        {"action": "reindex", "tenant": "acme", "server": "mail"},
        {"action": "reindex", "tenant": "acme", "server": "crm"},
    ]
    assert {i["InvocationType"] for i in client.invokes} == {"Event"}
    assert {i["FunctionName"] for i in client.invokes} == {"Indexer"}


async def test_a_failed_invoke_lets_the_next_ping_try_at_once() -> None:
    client = Lambda(fail=True)
    trigger = lambda_server_trigger("Indexer", client=client, clock=lambda: 0.0)
    await trigger("acme", "crm")
    client.fail = False
    await trigger("acme", "crm")
    assert len(client.invokes) == 1
