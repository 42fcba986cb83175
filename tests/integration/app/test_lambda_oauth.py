"""OAuth on the Lambda path: functions/mcp/app.py under Mangum, configured the way the stack configures
it (FOLDGATE_OAUTH_ISSUER, FOLDGATE_PUBLIC_URL, agent tokens required), trusting a real oidc-provider.

Pins: API Gateway events with a provider-minted token reach the tools their scope allows; a token for
another resource, or none, gets the 401 whose challenge names the metadata URL on the public domain;
the metadata route answers through the same handler.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient
from tests.lambdas import LambdaContext, event, load_function
from tests.oauth_provider import Provider, oidc_provider
from tests.procs import replay

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
PUBLIC = "https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"  # the recorded events' domain


@dataclass
class Stack:
    handler: Handler
    provider: Provider


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("lambda-oauth")
    with oidc_provider(tmp) as provider, replay() as rp:
        doc = {"servers": [{"name": n, "url": rp.urls[n]} for n in ("crm", "tickets")]}
        (tmp / "foldgate.json").write_text(json.dumps(doc))
        store = SqliteStore(tmp / "store.sqlite3")
        asyncio.run(Indexer(store, UpstreamClient()).index_tenant("default", parse_tenant_config(doc)))
        store.close()
        env = {
            "FOLDGATE_STORE": "sqlite",
            "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
            "FOLDGATE_CONFIG_SOURCE": "file",
            "FOLDGATE_CONFIG_FILE": str(tmp / "foldgate.json"),
            "FOLDGATE_AUTH_REQUIRED": "true",
            "FOLDGATE_TOKEN_SECRET": "lambda-oauth-test-secret-0123456789",
            "FOLDGATE_ALLOW_TENANT_HEADER": "false",
            "FOLDGATE_OAUTH_ISSUER": provider.issuer,
            "FOLDGATE_PUBLIC_URL": PUBLIC,
            # The provider is on loopback; the stack sets false and its issuer is a public host.
            "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "true",
        }
        yield Stack(load_function("mcp", "mcp_oauth_function_app", env).handler, provider)


def invoke(stack: Stack, name: str, token: str | None = None) -> tuple[int, dict[str, str], dict[str, Any]]:
    ev = event(name)
    if token is not None:
        ev["headers"] = {**ev["headers"], "authorization": f"Bearer {token}"}
    response = stack.handler(ev, LambdaContext())
    body = json.loads(response["body"]) if response.get("body") else {}
    return int(response["statusCode"]), {k.lower(): v for k, v in response["headers"].items()}, body


def test_a_provider_token_for_the_public_url_lists_what_its_scope_allows(stack: Stack) -> None:
    token = stack.provider.machine_token(PUBLIC, "foldgate:write foldgate:server:tickets")
    status, _, body = invoke(stack, "mcp_tools_list.json", token)
    assert status == 200, body
    names = {t["name"] for t in body["result"]["tools"]}
    assert "tickets__list_tickets" in names
    # readOnlyHint false without destructiveHint: destructive by the MCP spec's default, not write.
    assert "tickets__update_ticket" not in names
    assert not any(n.startswith("crm__") for n in names)


def test_a_token_for_the_endpoint_itself_is_accepted_and_calls_a_tool(stack: Stack) -> None:
    token = stack.provider.machine_token(PUBLIC + "/mcp/all", "foldgate:read")
    status, _, body = invoke(stack, "mcp_tools_call.json", token)
    assert status == 200, body
    assert body["result"]["isError"] is False, body


@pytest.mark.parametrize("resource", [None, "https://other.example/mcp"])
def test_no_token_or_another_resources_token_gets_the_challenge(stack: Stack, resource: str | None) -> None:
    token = None if resource is None else stack.provider.machine_token(resource, "foldgate:read")
    status, headers, body = invoke(stack, "mcp_tools_list.json", token)
    assert status == 401
    metadata = f"{PUBLIC}/.well-known/oauth-protected-resource/mcp/all"
    assert headers["www-authenticate"].startswith(f'Bearer resource_metadata="{metadata}"')
    assert "error" in body


def test_metadata_is_served_by_the_same_handler(stack: Stack) -> None:
    ev = event("healthz.json")
    path = "/.well-known/oauth-protected-resource/mcp/all"
    ev.update(rawPath=path, routeKey="GET /.well-known/oauth-protected-resource/{proxy+}")
    ev["requestContext"] = {**ev["requestContext"], "http": {**ev["requestContext"]["http"], "path": path}}
    response = stack.handler(ev, LambdaContext())
    assert response["statusCode"] == 200
    doc = json.loads(response["body"])
    assert doc["resource"] == PUBLIC + "/mcp/all"
    assert doc["authorization_servers"] == [stack.provider.issuer]
