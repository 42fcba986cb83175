"""The operator console on AdminFunction's handler (functions/admin/app.py under Mangum), driven by API
Gateway v2 events: the same pages as locally, a Secure session cookie behind HTTPS, and the agent-facing
token path unable to open it."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from foldgate.config.tenant import parse_tenant_config
from foldgate.index.indexer import Indexer
from foldgate.store.catalog.sqlite import SqliteStore
from foldgate.upstream.client import UpstreamClient
from tests.lambda_http import v2_event
from tests.lambdas import LambdaContext, load_function
from tests.procs import replay

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
KEY = "lambda-operator-key-" + "z" * 24
HOST = "abc123.execute-api.us-east-1.amazonaws.com"
FORM = ("Content-Type", "application/x-www-form-urlencoded")


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str | None]]:
    """The AdminFunction's environment: a SQLite state file (catalog, sign-outs) every instance shares."""
    tmp = tmp_path_factory.mktemp("lambda-console")
    with replay() as rp:
        doc = {
            "servers": [
                {"name": "crm", "url": rp.urls["crm"]},
                {"name": "tickets", "url": rp.urls["tickets"]},
            ]
        }
        (tmp / "foldgate.json").write_text(json.dumps(doc))
        store = SqliteStore(tmp / "store.sqlite3")
        asyncio.run(Indexer(store, UpstreamClient()).index_tenant("default", parse_tenant_config(doc)))
        store.close()
        env = {
            "FOLDGATE_STORE": "sqlite",
            "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"),
            "FOLDGATE_CONFIG_SOURCE": "file",
            "FOLDGATE_CONFIG_FILE": str(tmp / "foldgate.json"),
            "FOLDGATE_OPERATOR_KEY": KEY,
        }
        yield env


@pytest.fixture(scope="module")
def handler(env: dict[str, str | None]) -> Handler:
    handler: Handler = load_function("admin", "admin_console_app", env).handler
    return handler


@pytest.fixture(scope="module")
def second(env: dict[str, str | None]) -> Handler:
    """Another AdminFunction instance (its own cold start) on the same state."""
    handler: Handler = load_function("admin", "admin_console_app_2", env).handler
    return handler


def call(
    handler: Handler, method: str, target: str, headers: list[tuple[str, str]], body: bytes = b""
) -> dict[str, Any]:
    return handler(v2_event(method, target, [("Host", HOST), *headers], body), LambdaContext())


def test_login_on_lambda_sets_a_secure_strict_cookie_that_opens_every_page(handler: Handler) -> None:
    origin = ("Origin", f"https://{HOST}")
    refused = call(handler, "POST", "/console/login", [FORM, origin], b"operator_key=wrong-key-" + b"x" * 20)
    assert refused["statusCode"] == 401
    assert not refused.get("cookies")
    ok = call(handler, "POST", "/console/login", [FORM, origin], f"operator_key={KEY}".encode())
    assert ok["statusCode"] == 303
    [cookie] = ok["cookies"]
    flags = cookie.lower()
    assert "secure" in flags.replace("samesite", "")
    assert "httponly" in flags
    assert "samesite=strict" in flags
    session = cookie.split(";")[0]
    pages = {
        "fleet": "Fleet",
        "budget": "Context budget",
        "approvals": "Approvals",
        "tokens": "Agent tokens",
        "search?query=contact": "Search playground",
    }
    for path, heading in pages.items():
        page = call(handler, "GET", f"/console/{path}", [("Cookie", session)])
        assert page["statusCode"] == 200, path
        assert f"<h1>{heading}</h1>" in page["body"]
        assert "script-src 'self'" in page["headers"]["content-security-policy"]
    static = call(handler, "GET", "/console/static/htmx.min.js", [("Cookie", session)])
    assert static["statusCode"] == 200
    csrf = re.search(
        r'name="csrf" value="([^"]+)"', call(handler, "GET", "/console/tokens", [("Cookie", session)])["body"]
    )
    assert csrf is not None
    cross = call(handler, "POST", "/console/tokens", [FORM, ("Cookie", session), ("Origin", "https://evil.example")],
                 f"csrf={csrf.group(1)}&tenant=default".encode())  # fmt: skip
    assert cross["statusCode"] == 403


def test_without_a_session_the_console_sends_the_browser_to_login(handler: Handler) -> None:
    page = call(handler, "GET", "/console/approvals", [("Authorization", f"Bearer {KEY}")])
    # The operator key as a bearer header (the admin API's credential) is not a console session.
    assert page["statusCode"] == 303
    assert page["headers"]["location"] == "/console/login"


def test_wrong_keys_are_limited_by_api_gateways_source_ip_not_a_forwarded_for_header(
    handler: Handler,
) -> None:
    def login(source: str, key: str, *extra: tuple[str, str]) -> dict[str, Any]:
        event = v2_event(
            "POST", "/console/login", [("Host", HOST), FORM, ("Origin", f"https://{HOST}"), *extra],
            f"operator_key={key}".encode(),
        )  # fmt: skip
        event["requestContext"]["http"]["sourceIp"] = source
        return handler(event, LambdaContext())

    # The default: five wrong keys a minute per address.
    assert [login("198.51.100.7", "wrong")["statusCode"] for _ in range(5)] == [401] * 5
    for extra in [(), (("X-Forwarded-For", "203.0.113.50"),)]:
        limited = login("198.51.100.7", KEY, *extra)
        assert limited["statusCode"] == 429
        assert int(limited["headers"]["retry-after"]) > 0
        assert not limited.get("cookies")
    # Another source address still gets its own attempts.
    assert login("198.51.100.8", KEY)["statusCode"] == 303


def test_the_admin_api_and_the_sign_in_form_spend_one_budget_of_wrong_keys_per_source_ip(
    handler: Handler,
) -> None:
    def at(source: str, method: str, target: str, headers: list[tuple[str, str]], body: bytes = b"") -> int:
        event = v2_event(method, target, [("Host", HOST), *headers], body)
        event["requestContext"]["http"]["sourceIp"] = source
        status: int = handler(event, LambdaContext())["statusCode"]
        return status

    def admin(source: str, key: str) -> int:
        return at(source, "GET", "/api/v1/status?tenant=default", [("Authorization", f"Bearer {key}")])

    def login(source: str, key: str) -> int:
        origin = ("Origin", f"https://{HOST}")
        return at(source, "POST", "/console/login", [FORM, origin], f"operator_key={key}".encode())

    assert admin("198.51.100.20", KEY) == 200
    # Five wrong keys a minute per address, whichever door they knock on.
    assert [admin("198.51.100.20", "wrong") for _ in range(3)] == [401] * 3
    assert [login("198.51.100.20", "wrong") for _ in range(2)] == [401] * 2
    assert admin("198.51.100.20", KEY) == 429
    assert login("198.51.100.20", KEY) == 429
    assert admin("198.51.100.21", KEY) == 200


def test_a_cookie_copied_before_sign_out_on_one_instance_is_refused_on_every_instance(
    handler: Handler, second: Handler
) -> None:
    origin = ("Origin", f"https://{HOST}")
    ok = call(handler, "POST", "/console/login", [FORM, origin], f"operator_key={KEY}".encode())
    session = ok["cookies"][0].split(";")[0]
    page = call(second, "GET", "/console/fleet", [("Cookie", session)])
    assert page["statusCode"] == 200
    found = re.search(r'name="csrf" value="([^"]+)"', page["body"])
    assert found is not None
    out = call(
        second, "POST", "/console/logout", [FORM, origin, ("Cookie", session)], f"csrf={found[1]}".encode()
    )
    assert out["statusCode"] == 303
    for instance in (handler, second):
        refused = call(instance, "GET", "/console/fleet", [("Cookie", session)])
        assert refused["statusCode"] == 303
        assert refused["headers"]["location"] == "/console/login"
