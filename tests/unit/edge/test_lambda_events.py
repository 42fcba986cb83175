"""On the Lambda path (Mangum under API Gateway's v2 event), a call is one activity event named by the
invocation's request id (the id in the function's logs), with the client from the request itself."""

from __future__ import annotations

import json

from mangum import Mangum

from foldgate.config.source import StaticConfigSource
from foldgate.edge.app import create_app
from foldgate.index.indexer import catalog_from_tools
from foldgate.serve.gateway import Gateway
from foldgate.store.catalog.sqlite import SqliteStore
from tests.gateway_fixture import RecordingUpstream, demo_config, demo_tools
from tests.lambdas import LambdaContext, event
from tests.recorders import ListRecorder


def test_a_lambda_invocation_is_one_event_with_its_request_id() -> None:
    store = SqliteStore(":memory:")
    store.publish(catalog_from_tools("default", demo_tools()), expected_current=None)
    gateway = Gateway(store, StaticConfigSource({"default": demo_config()}), RecordingUpstream())
    recorder = ListRecorder()
    handler = Mangum(create_app(gateway, recorder=recorder), lifespan="off")
    answer = handler(event("mcp_tools_call.json"), LambdaContext())
    assert answer["statusCode"] == 200
    assert json.loads(answer["body"])["result"]["isError"] is False
    listed = handler(event("mcp_tools_list.json"), LambdaContext())
    assert listed["statusCode"] == 200
    call = recorder.only_call()
    assert call.request_id == LambdaContext.aws_request_id
    assert (call.tenant, call.surface, call.server, call.tool, call.outcome) == (
        "default", "mcp/all", "crm", "find_contact", "ok",
    )  # fmt: skip
    assert call.protocol == "2025-11-25"
    assert call.response_bytes == len(answer["body"].encode())
