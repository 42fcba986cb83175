"""The per-call relay treats everything an upstream sends as hostile: only progress for the gateway's
own token is relayed (rebuilt, with the client's token), log messages are rebuilt and bounded, and a
request for input the client cannot take is refused at once and remembered for the call's error."""

from __future__ import annotations

from typing import Any

import pytest

from foldgate.errors import UpstreamInputError
from foldgate.upstream.relay import MAX_LOG_BYTES, Progress, Relay, current_relay, listening, relaying

TOO_BIG = f"(a log message of more than {MAX_LOG_BYTES} bytes from srv, not relayed)"


def _relay(**kw: Any) -> tuple[Relay, list[dict[str, Any]]]:
    sent: list[dict[str, Any]] = []

    async def notify(message: dict[str, Any]) -> None:
        sent.append(message)

    return Relay(notify=notify, progress_token="client-token", **kw), sent


async def test_progress_is_relayed_with_the_clients_token_and_rebuilt() -> None:
    relay, sent = _relay()
    assert relay.call_meta(modern=False) == {"progressToken": relay.upstream_token}
    hostile = {"progressToken": relay.upstream_token, "progress": 2, "total": 4, "message": "x" * 5000,
               "extra": "dropped", "_meta": {"k": 1}}  # fmt: skip
    await relay.notification("srv", {"method": "notifications/progress", "params": hostile})
    (message,) = sent
    assert message["params"] == {
        "progressToken": "client-token",
        "progress": 2,
        "total": 4,
        "message": "x" * 1000,
    }


@pytest.mark.parametrize(
    "params",
    [
        {"progressToken": "someone-else", "progress": 1},  # another token: not this call's
        {"progressToken": "client-token", "progress": 1},  # the client's own: never given upstream
        {"progress": 1},
        {"progressToken": "TOKEN", "progress": "1"},
        {"progressToken": "TOKEN", "progress": True},
        {"progressToken": "TOKEN", "progress": float("nan")},
    ],
)
async def test_progress_not_for_this_call_or_malformed_is_dropped(params: dict[str, Any]) -> None:
    relay, sent = _relay()
    if params.get("progressToken") == "TOKEN":
        params = {**params, "progressToken": relay.upstream_token}
    await relay.notification("srv", {"method": "notifications/progress", "params": params})
    assert sent == []


async def test_log_messages_are_rebuilt_named_after_the_server_and_bounded() -> None:
    relay, sent = _relay()
    logs = [
        {"level": "info", "logger": "db", "data": {"rows": 3}, "extra": 1},
        {"level": "info", "data": "x" * (MAX_LOG_BYTES + 1)},
        {"level": "shout", "data": "unknown level"},
        {"level": "info"},
    ]
    for params in logs:
        await relay.notification("srv", {"method": "notifications/message", "params": params})
    assert [m["params"] for m in sent] == [
        {"level": "info", "logger": "srv/db", "data": {"rows": 3}},
        {"level": "info", "logger": "srv", "data": TOO_BIG},
    ]


async def test_a_request_for_input_nobody_takes_is_refused_at_once_and_named() -> None:
    relay = Relay()
    reply = await relay.request(
        "srv", {"method": "elicitation/create", "params": {"message": "Your password?", "mode": "form"}}
    )
    assert reply["error"]["code"] == -32600
    assert relay.refused == ["elicitation/create, user input (form): 'Your password?'"]
    assert (await relay.request("srv", {"method": "roots/list"}))["error"]["code"] == -32601
    assert await relay.request("srv", {"method": "ping"}) == {"result": {}}


async def test_a_request_for_input_the_client_takes_is_asked_without_the_upstreams_meta() -> None:
    asked: list[tuple[str, dict[str, Any]]] = []

    async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((method, params))
        return {"result": {"action": "decline"}}

    relay = Relay(ask=ask, asks=frozenset({"elicitation/create"}))
    params = {"message": "ok?", "requestedSchema": {"type": "object"}, "_meta": {"upstream": 1}}
    assert await relay.request("srv", {"method": "elicitation/create", "params": params}) == {
        "result": {"action": "decline"}
    }
    assert asked == [("elicitation/create", {"message": "ok?", "requestedSchema": {"type": "object"}})]
    # URL mode needs its own declaration; sampling was not declared.
    url = {"message": "open", "mode": "url", "url": "https://x"}
    assert "error" in await relay.request("srv", {"method": "elicitation/create", "params": url})
    assert "error" in await relay.request("srv", {"method": "sampling/createMessage", "params": {}})
    assert len(asked) == 1
    assert len(relay.refused) == 2


def test_input_required_the_client_cannot_take_names_what_was_asked() -> None:
    relay = Relay(input_required=frozenset({"sampling/createMessage"}))
    result = {"resultType": "input_required", "inputRequests": {"a": {"method": "elicitation/create",
              "params": {"message": "Which account?"}}}}  # fmt: skip
    with pytest.raises(UpstreamInputError, match="Which account"):
        relay.check_input_required("srv", "tool", result)
    Relay(input_required=frozenset({"elicitation/create"})).check_input_required("srv", "tool", result)


async def test_a_task_runner_hears_progress_through_listening() -> None:
    heard: list[Progress] = []

    async def on_progress(progress: Progress) -> None:
        heard.append(progress)

    outer, sent = _relay()
    with relaying(outer), listening(on_progress) as relay:
        assert current_relay() is relay
        call = relay.for_call()
        params = {"progressToken": call.upstream_token, "progress": 1, "message": "half"}
        await call.notification("srv", {"method": "notifications/progress", "params": params})
    assert heard == [Progress(1.0, None, "half")]
    assert [m["params"]["progressToken"] for m in sent] == ["client-token"]
    assert current_relay() is None
