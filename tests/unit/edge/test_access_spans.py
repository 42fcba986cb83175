"""The auth span: ``ok`` with the caller's tenant, or how the credential was refused (``denied``,
``rate_limited``), and never the credential itself."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from foldgate.auth.authority import TokenAuthority
from foldgate.edge.access import Access, RateLimited
from foldgate.edge.ratelimit import RateLimiter
from foldgate.errors import AuthError
from foldgate.model.agent_token import TokenHasher
from foldgate.store.tokens.sqlite import SqliteTokenStore
from foldgate.telemetry import tracing
from tests.tracing import recording_spans, span_text

SECRET = "fgt_canary-credential-0c1d"


def _request(authorization: str | None = None) -> Request:
    headers = [(b"authorization", authorization.encode())] if authorization else []
    scope = {"type": "http", "method": "POST", "path": "/mcp", "headers": headers, "client": ("10.0.0.1", 1)}
    return Request(scope)


async def test_an_accepted_caller_is_an_ok_auth_span_with_its_tenant() -> None:
    with recording_spans() as exporter:
        with tracing.request_trace(None):
            await Access(default_tenant="acme").resolve(_request(), "/mcp")
        (auth,) = [s for s in exporter.get_finished_spans() if s.name == "foldgate.auth"]
    assert dict(auth.attributes or {}) == {"foldgate.tenant": "acme", "foldgate.outcome": "ok"}


async def test_a_refused_token_is_denied_and_never_recorded() -> None:
    authority = TokenAuthority(SqliteTokenStore(":memory:"), TokenHasher(b"k" * 32))
    access = Access(authority=authority, auth_required=True)
    with recording_spans() as exporter:
        with pytest.raises(AuthError), tracing.request_trace(None):
            await access.resolve(_request(f"Bearer {SECRET}"), "/mcp")
        (auth,) = [s for s in exporter.get_finished_spans() if s.name == "foldgate.auth"]
    assert dict(auth.attributes or {})["foldgate.outcome"] == "denied"
    assert SECRET not in span_text(auth)


async def test_a_spent_budget_is_rate_limited() -> None:
    access = Access(limiter=RateLimiter(1))
    with recording_spans() as exporter:
        with tracing.request_trace(None):
            await access.resolve(_request(), "/mcp")
        with pytest.raises(RateLimited), tracing.request_trace(None):
            await access.resolve(_request(), "/mcp")
        outcomes = [
            dict(s.attributes or {})["foldgate.outcome"]
            for s in exporter.get_finished_spans()
            if s.name == "foldgate.auth"
        ]
    assert outcomes == ["ok", "rate_limited"]
