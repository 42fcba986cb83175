"""The admin API's OpenAPI document names every answer its routes really give (schemathesis checks the
whole of it against the running API in tests/e2e/test_openapi_schemathesis.py): the operator check's
401/429/503 with their body on every route, 400 for a body that is not JSON, 404 for an unknown tenant,
the activity cursor's alphabet; and a 405 lists every method the path serves, as the document does."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import pytest

from foldgate.edge.admin_docs import CURSOR_PATTERN
from foldgate.store.activity.codec import encode_cursor
from tests.unit.edge.test_admin import OP, OPERATOR, admin_client


@pytest.fixture
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async for c in admin_client(OPERATOR.encode()):
        yield c


async def _spec(client: httpx2.AsyncClient) -> dict[str, Any]:
    spec: dict[str, Any] = (await client.get("/api/v1/openapi.json", headers=OP)).json()
    return spec


async def test_every_admin_route_documents_the_operator_checks_answers(client: httpx2.AsyncClient) -> None:
    spec = await _spec(client)
    error = {"$ref": "#/components/schemas/ErrorBody"}
    admin = [(p, m, op) for p, ops in spec["paths"].items() for m, op in ops.items() if "hooks" not in p]
    assert len(admin) >= 8
    for path, method, op in admin:
        if path == "/healthz":
            continue
        for status in ("401", "429", "503"):
            body = op["responses"][status]["content"]["application/json"]["schema"]
            assert body == error, (method, path, status)
        assert "Retry-After" in op["responses"]["429"]["headers"]


async def test_unknown_tenants_and_unparsable_bodies_are_documented_and_answered(
    client: httpx2.AsyncClient,
) -> None:
    spec = await _spec(client)
    for path in ("/api/v1/routing", "/api/v1/status", "/api/v1/tools", "/api/v1/approvals"):
        assert "404" in spec["paths"][path]["get"]["responses"], path
        r = await client.get(path, params={"tenant": "nosuch"}, headers=OP)
        assert r.status_code == 404
    for path in ("/api/v1/reindex", "/api/v1/approvals", "/api/v1/approvals/reject"):
        assert {"400", "404"} <= set(spec["paths"][path]["post"]["responses"]), path
        r = await client.post(path, content=b"\xff{", headers={**OP, "content-type": "application/json"})
        assert r.status_code == 400


async def test_the_cursor_parameter_names_its_alphabet_and_real_cursors_match_it(
    client: httpx2.AsyncClient,
) -> None:
    spec = await _spec(client)
    (cursor,) = [p for p in spec["paths"]["/api/v1/activity"]["get"]["parameters"] if p["name"] == "cursor"]
    patterns = [s.get("pattern") for s in cursor["schema"]["anyOf"] if s.get("type") == "string"]
    assert patterns == [CURSOR_PATTERN]
    assert re.match(CURSOR_PATTERN, encode_cursor("acme-01.x", "audit", "1733570000000-0123456789ab"))


@pytest.mark.parametrize(
    ("path", "allowed"),
    [("/api/v1/approvals", "GET, POST"), ("/api/v1/status", "GET"), ("/api/v1/reindex", "POST")],
)
async def test_a_405_allows_every_method_of_the_path(
    client: httpx2.AsyncClient, path: str, allowed: str
) -> None:
    for method in ("OPTIONS", "TRACE", "PUT"):
        r = await client.request(method, path, headers=OP)
        assert (r.status_code, r.headers.get("allow")) == (405, allowed), method
