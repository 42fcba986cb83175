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
    assert (await relay.request("srv", {"method": "logging/setLevel"}))["error"]["code"] == -32601
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


def _input_required(requests: dict[str, Any], state: str | None = "up-state") -> dict[str, Any]:
    result: dict[str, Any] = {"resultType": "input_required", "inputRequests": requests}
    if state is not None:
        result["requestState"] = state
    return result


_ELICIT = {"method": "elicitation/create", "params": {"message": "Name?", "_meta": {"upstream": 1}}}
_SAMPLE = {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}}


def _asking(*replies: dict[str, Any]) -> tuple[Relay, list[tuple[str, dict[str, Any]]]]:
    asked: list[tuple[str, dict[str, Any]]] = []
    queue = list(replies)

    async def ask(method: str, params: dict[str, Any]) -> dict[str, Any]:
        asked.append((method, params))
        return queue.pop(0)

    relay = Relay(ask=ask, asks=frozenset({"elicitation/create", "sampling/createMessage"}))
    return relay, asked


async def test_input_required_for_a_handshake_era_client_is_asked_on_its_stream_and_answered() -> None:
    """Each request is asked of the client (without the upstream's _meta); the retry carries the
    replies under the upstream's keys and the upstream's own requestState."""
    relay, asked = _asking(
        {"result": {"action": "accept", "content": {"n": "Ada"}}}, {"result": {"role": "a"}}
    )
    resume = await relay.answer_input_required("srv", "t", _input_required({"who": _ELICIT, "s": _SAMPLE}))
    assert resume == {
        "inputResponses": {"who": {"action": "accept", "content": {"n": "Ada"}}, "s": {"role": "a"}},
        "requestState": "up-state",
    }
    assert asked == [
        ("elicitation/create", {"message": "Name?"}),
        ("sampling/createMessage", {"messages": [], "maxTokens": 5}),
    ]


@pytest.mark.parametrize(
    "requests",
    [
        {"who": _ELICIT, "roots": {"method": "roots/list", "params": {}}},  # not relayed at all
        {"who": _ELICIT, "u": {"method": "elicitation/create", "params": {"mode": "url", "message": "Go"}}},
        {f"k{i}": _ELICIT for i in range(17)},  # too many at once
        {"k" * 201: _ELICIT},  # a key too long to carry
    ],
)
async def test_input_required_the_stream_cannot_carry_is_refused_before_asking_anything(
    requests: dict[str, Any],
) -> None:
    relay, asked = _asking()
    with pytest.raises(UpstreamInputError, match="cannot receive here"):
        await relay.answer_input_required("srv", "t", _input_required(requests))
    assert asked == []


@pytest.mark.parametrize(
    "reply",
    [{"error": {"code": -1, "message": "no"}}, {"result": "yes"}, {"result": {"x": "y" * 300_000}}],
)
async def test_a_reply_that_is_no_bounded_object_ends_the_call(reply: dict[str, Any]) -> None:
    relay, _ = _asking(reply)
    with pytest.raises(UpstreamInputError, match="did not give"):
        await relay.answer_input_required("srv", "t", _input_required({"who": _ELICIT}))


async def test_input_required_for_a_modern_client_is_left_to_the_edge_and_asks_nothing() -> None:
    relay, asked = _asking()
    relay.input_required = frozenset({"elicitation/create"})
    assert await relay.answer_input_required("srv", "t", _input_required({"who": _ELICIT})) is None
    assert asked == []
    with pytest.raises(UpstreamInputError):  # a client that takes nothing: the clear error, as before
        await Relay().answer_input_required("srv", "t", _input_required({"who": _ELICIT}))


@pytest.mark.parametrize(
    ("takes", "offered"),
    [
        (set(), None),
        ({"elicitation/create", "elicitation/create#url"}, {"elicitation": {"form": {}, "url": {}}}),
        ({"elicitation/create#url", "sampling/createMessage"}, {"elicitation": {"url": {}}, "sampling": {}}),
        ({"roots/list"}, {"roots": {}}),
    ],
)
def test_the_capabilities_offered_upstream_are_the_clients_own(
    takes: set[str], offered: dict[str, Any] | None
) -> None:
    assert Relay(input_required=frozenset(takes)).offered_capabilities() == offered
    assert Relay(asks=frozenset(takes)).offered_capabilities() == offered


def test_what_a_client_declared_is_offered_even_when_this_path_cannot_carry_it() -> None:
    """Declared nothing: nothing (the upstream refuses with -32021 rather than run or ask); declared
    but not carried here (a meta-tool surface, a buffered response): offered, so the upstream asks and
    the call's error names what (the refusal); unknown (a handshake-era client): the gateway's own."""
    assert Relay(declared=frozenset()).offered_capabilities() == {}
    assert Relay(declared=frozenset({"sampling/createMessage"})).offered_capabilities() == {"sampling": {}}
    assert Relay(declared=frozenset()).for_call().offered_capabilities() == {}
    assert Relay().offered_capabilities() is None


async def test_roots_list_is_asked_of_a_client_that_declared_roots_and_refused_otherwise() -> None:
    relay, asked = _asking({"result": {"roots": [{"uri": "file:///w"}]}})
    relay.asks = frozenset({"roots/list"})
    assert await relay.request("srv", {"method": "roots/list", "params": {}}) == {
        "result": {"roots": [{"uri": "file:///w"}]}
    }
    assert asked == [("roots/list", {})]
    refused = Relay(asks=frozenset({"elicitation/create"}))
    assert "error" in await refused.request("srv", {"method": "roots/list", "params": {}})
    assert refused.refused == ["roots/list, the client's roots"]
