"""A tenant's own ``oauth:`` block on the Lambda path: no stack-level issuer at all, the tenant config
names a real oidc-provider, and its tokens reach the tools; removing the block (a live config edit)
turns OAuth off for the tenant on the next reload, and a token whose (signed) claims are otherwise
valid still cannot pick another tenant by header or claim.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
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
    config: Path
    doc: dict[str, Any]


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    tmp = tmp_path_factory.mktemp("lambda-tenant-oauth")
    with oidc_provider(tmp) as provider, replay() as rp:
        servers = [{"name": n, "url": rp.urls[n]} for n in ("crm", "tickets")]
        doc = {"servers": servers, "oauth": {"issuer": provider.issuer}}
        config = tmp / "foldgate.json"
        config.write_text(json.dumps(doc))
        store = SqliteStore(tmp / "store.sqlite3")
        asyncio.run(Indexer(store, UpstreamClient()).index_tenant("default", parse_tenant_config(doc)))
        store.close()
        env = {
            "FOLDGATE_STORE": "sqlite",
            "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
            "FOLDGATE_CONFIG_SOURCE": "file",
            "FOLDGATE_CONFIG_FILE": str(config),
            "FOLDGATE_CONFIG_CACHE_SECONDS": "0",
            "FOLDGATE_AUTH_REQUIRED": "true",
            "FOLDGATE_TOKEN_SECRET": "lambda-tenant-oauth-secret-0123456789",
            "FOLDGATE_ALLOW_TENANT_HEADER": "false",
            "FOLDGATE_TENANT_CLAIM": "foldgate_tenant",
            "FOLDGATE_PUBLIC_URL": PUBLIC,
            # The provider is on loopback; the cloud refuses such an issuer (see the unit tests).
            "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "true",
        }
        yield Stack(load_function("mcp", "mcp_tenant_oauth_function_app", env).handler, provider, config, doc)


def invoke(stack: Stack, token: str | None, **headers: str) -> tuple[int, dict[str, Any]]:
    ev = event("mcp_tools_list.json")
    extra = {"authorization": f"Bearer {token}"} if token is not None else {}
    ev["headers"] = {**ev["headers"], **extra, **headers}
    response = stack.handler(ev, LambdaContext())
    body = json.loads(response["body"]) if response.get("body") else {}
    return int(response["statusCode"]), body


def test_the_tenants_own_issuer_is_trusted_without_any_stack_issuer(stack: Stack) -> None:
    token = stack.provider.machine_token(PUBLIC, "foldgate:read foldgate:server:crm")
    status, body = invoke(stack, token, **{"x-foldgate-tenant": "other"})
    assert status == 200, body
    servers = {t["name"].split("__")[0] for t in body["result"]["tools"] if "__" in t["name"]}
    assert servers == {"crm"}
    assert invoke(stack, None)[0] == 401


def test_a_signed_claim_naming_another_tenant_is_refused(stack: Stack) -> None:
    # Signed by the default tenant's (real) issuer, but naming a tenant that issuer does not serve.
    token = stack.provider.sign(stack.provider.claims(PUBLIC, foldgate_tenant="other"))
    assert invoke(stack, token)[0] == 401
    same = stack.provider.sign(stack.provider.claims(PUBLIC, foldgate_tenant="default"))
    assert invoke(stack, same)[0] == 200


def test_removing_the_block_turns_oauth_off_for_the_tenant(stack: Stack) -> None:
    token = stack.provider.machine_token(PUBLIC, "foldgate:read")
    assert invoke(stack, token)[0] == 200
    doc = {k: v for k, v in stack.doc.items() if k != "oauth"}
    time.sleep(0.01)  # a distinct mtime, so the file source sees the edit
    stack.config.write_text(json.dumps(doc))
    try:
        deadline = time.monotonic() + 10
        while invoke(stack, token)[0] != 401 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert invoke(stack, token)[0] == 401
    finally:
        stack.config.write_text(json.dumps(stack.doc))
