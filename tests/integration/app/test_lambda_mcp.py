"""The MCP Lambda handler (functions/mcp/app.py under Mangum) driven by real API Gateway v2 events.

Upstreams are replay servers on loopback; the catalog is indexed into the embedded store first.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient
from tests.helpers import error_of
from tests.lambdas import LambdaContext, event, load_function
from tests.procs import Replay, replay

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


@pytest.fixture(scope="module")
def lambda_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Handler, Replay]]:
    tmp = tmp_path_factory.mktemp("lambda-mcp")
    with replay() as rp:
        doc = {
            "direct_tool_response_mode": "deferred",
            "servers": [
                {"name": "crm", "url": rp.urls["crm"]},
                {"name": "tickets", "url": rp.urls["tickets"]},
            ],
        }
        (tmp / "foldgate.json").write_text(json.dumps(doc))
        store = SqliteStore(tmp / "store.sqlite3")
        report = asyncio.run(
            Indexer(store, UpstreamClient()).index_tenant("default", parse_tenant_config(doc))
        )
        assert report.changed
        store.close()
        env = {
            "FOLDGATE_STORE": "sqlite",
            "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
            "FOLDGATE_CONFIG_SOURCE": "file",
            "FOLDGATE_CONFIG_FILE": str(tmp / "foldgate.json"),
        }
        yield load_function("mcp", "mcp_function_app", env).handler, rp


def invoke(handler: Handler, name: str) -> tuple[int, dict[str, Any]]:
    response = handler(event(name), LambdaContext())
    body = json.loads(response["body"]) if response.get("body") else {}
    return int(response["statusCode"]), body


def test_initialize_carries_instructions_and_legend(lambda_env: tuple[Handler, Replay]) -> None:
    status, body = invoke(lambda_env[0], "mcp_initialize.json")
    assert status == 200
    assert body["result"]["serverInfo"]["name"] == "foldgate"
    assert "describe_tool" in body["result"]["instructions"]
    assert "A signature without ~" in body["result"]["instructions"]


@pytest.mark.parametrize("name", ["mcp_tools_list.json", "mcp_tools_list_modern.json"])
def test_tools_list_is_deferred_in_both_protocol_eras(lambda_env: tuple[Handler, Replay], name: str) -> None:
    status, body = invoke(lambda_env[0], name)
    assert status == 200
    tools = {t["name"]: t for t in body["result"]["tools"]}
    assert set(tools) == {
        "describe_tool", "crm__find_contact", "crm__create_contact", "crm__delete_contact",
        "tickets__list_tickets", "tickets__update_ticket",
    }  # fmt: skip
    create = tools["crm__create_contact"]
    assert create["inputSchema"] == {"type": "object"}
    assert create["description"] == (
        "[crm] Create a contact.\n"
        "create_contact(name*:str, email*:str, address:{city:str, country:str}, "
        "tags:[enum[lead|customer|partner]])"
    )
    assert create["annotations"] == {"readOnlyHint": False, "destructiveHint": False}
    assert tools["describe_tool"]["inputSchema"]["required"] == ["tool_ids"]


def test_describe_tool_returns_real_schemas_for_both_id_forms(lambda_env: tuple[Handler, Replay]) -> None:
    status, body = invoke(lambda_env[0], "mcp_describe_tool.json")
    assert status == 200
    rows = body["result"]["structuredContent"]["tools"]
    assert [r["id"] for r in rows] == ["crm__create_contact", "tickets__list_tickets"]
    assert rows[0]["input_schema"]["required"] == ["name", "email"]
    assert rows[1]["annotations"] == {"readOnlyHint": True}


def test_valid_call_reaches_the_upstream(lambda_env: tuple[Handler, Replay]) -> None:
    handler, rp = lambda_env
    rp.clear()
    status, body = invoke(handler, "mcp_tools_call.json")
    assert status == 200
    assert body["result"]["isError"] is False
    assert [c["tool"] for c in rp.calls()] == ["find_contact"]


def test_invalid_call_answers_with_the_schema_and_never_reaches_the_upstream(
    lambda_env: tuple[Handler, Replay],
) -> None:
    handler, rp = lambda_env
    rp.clear()
    status, body = invoke(handler, "mcp_tools_call_invalid.json")
    assert status == 200
    result = body["result"]
    assert result["isError"] is True
    err = error_of(result)
    assert err["error_type"] == "invalid_params"
    assert "'email' is a required property" in err["error"]
    assert err["input_schema"]["required"] == ["name", "email"]
    assert "describe_tool" in err["hint"]
    assert rp.calls() == []


def test_warm_invocations_keep_working(lambda_env: tuple[Handler, Replay]) -> None:
    # Mangum runs the app lifespan per invocation: each must get a fresh session manager.
    for _ in range(3):
        for name in (
            "mcp_initialize.json",
            "mcp_tools_list.json",
            "mcp_describe_tool.json",
            "mcp_tools_call.json",
        ):
            assert invoke(lambda_env[0], name)[0] == 200


def test_healthz(lambda_env: tuple[Handler, Replay]) -> None:
    assert invoke(lambda_env[0], "healthz.json") == (200, {"status": "ok"})


@pytest.mark.parametrize("name", ["mcp_get.json", "mcp_delete.json"])
@pytest.mark.parametrize("path", ["/mcp", "/mcp/all", "/mcp/call", "/mcp/code"])
def test_get_and_delete_are_a_json_405_through_mangum(
    lambda_env: tuple[Handler, Replay], name: str, path: str
) -> None:
    # A GET used to make Mangum raise AttributeError on the SDK's open stream (an API Gateway 500).
    recorded = event(name)
    recorded["rawPath"] = recorded["requestContext"]["http"]["path"] = path
    response = lambda_env[0](recorded, LambdaContext())
    assert response["statusCode"] == 405
    assert response["headers"]["allow"] == "POST"
    assert response["headers"]["content-type"].startswith("application/json")
    assert json.loads(response["body"])["error"]["code"] == -32600


def test_an_unexpected_error_is_a_jsonrpc_internal_error_with_the_lambda_request_id(
    lambda_env: tuple[Handler, Replay], monkeypatch: pytest.MonkeyPatch
) -> None:
    gateway = lambda_env[0].app.state.gateway  # type: ignore[attr-defined]

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("a bug")

    monkeypatch.setattr(gateway, "listing_json", broken)
    status, body = invoke(lambda_env[0], "mcp_tools_list.json")
    assert status == 500
    assert body["error"]["code"] == -32603
    # The id the function's log lines carry, so the operator can find the traceback.
    assert body["error"]["data"]["request_id"] == LambdaContext.aws_request_id
