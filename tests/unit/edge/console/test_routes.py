"""The console's routes in process: who gets in, what every POST must carry, the headers on every answer,
and what each page does with its input (tokens, approvals, reindex, the connect button)."""

from __future__ import annotations

import dataclasses
import html
import re
from pathlib import Path
from typing import Any

import pytest

from foldgate.config.source import FileConfigSource
from foldgate.config.tenant import parse_tenant_config
from foldgate.edge.console.login_limit import LoginLimit
from foldgate.model.catalog import CatalogVersion
from tests.unit.edge.console.conftest import OPERATOR_KEY, Console

FORM = {"content-type": "application/x-www-form-urlencoded"}


async def test_without_a_session_pages_redirect_to_login_and_posts_are_refused(make_console: Any) -> None:
    async for c in make_console():
        page = await c.client.get("/console/budget")
        assert page.status_code == 303
        assert page.headers["location"] == "/console/login"
        refused = await c.client.post("/console/tokens", data={"csrf": "x", "tenant": "default"})
        assert refused.status_code == 403
        assert c.tokens.list("default") == []


async def test_login_takes_only_the_operator_key_and_sets_a_strict_httponly_cookie(make_console: Any) -> None:
    async for c in make_console():
        issued, _ = c.tokens.issue("default", expires_in=None)
        for wrong in (issued, "nope", ""):
            r = await c.client.post("/console/login", data={"operator_key": wrong})
            assert r.status_code == 401
            assert "set-cookie" not in r.headers
        r = await c.client.post("/console/login", data={"operator_key": OPERATOR_KEY})
        assert r.status_code == 303
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie
        assert "samesite=strict" in cookie
        assert "path=/console" in cookie
        # Plain http on loopback: no Secure flag, or the browser would drop the cookie.
        assert "secure" not in cookie.replace("samesite", "")


async def test_wrong_keys_are_limited_per_address_with_429_and_retry_after_but_sign_ins_are_not(
    make_console: Any,
) -> None:
    async for c in make_console(login_limit=LoginLimit(2, 100)):
        for _ in range(4):
            assert (
                await c.client.post("/console/login", data={"operator_key": OPERATOR_KEY})
            ).status_code == 303
        for _ in range(2):
            assert (await c.client.post("/console/login", data={"operator_key": "nope"})).status_code == 401
        # Over the limit even the right key is not checked, and a forwarded-for header the caller
        # writes does not make it another address.
        for headers in ({}, {"x-forwarded-for": "203.0.113.9"}):
            r = await c.client.post("/console/login", data={"operator_key": OPERATOR_KEY}, headers=headers)
            assert r.status_code == 429
            assert r.headers["retry-after"] == "30"
            assert "Too many failed sign-ins; try again in 30 seconds." in r.text
            assert "set-cookie" not in r.headers


async def test_the_cookie_is_secure_anywhere_but_plain_http_on_loopback(make_console: Any) -> None:
    async for c in make_console():
        for base in ("https://console.example", "http://gateway.example"):
            r = await c.client.post(
                f"{base}/console/login",
                data={"operator_key": OPERATOR_KEY},
                headers={"host": base[base.index("//") + 2 :]},
            )
            assert "; secure" in r.headers["set-cookie"].lower(), base


async def test_every_answer_carries_the_strict_headers(make_console: Any) -> None:
    async for c in make_console():
        answers = [await c.client.get("/console/login"), await c.client.get("/console/fleet")]
        await c.login()
        answers += [await c.client.get("/console/fleet"), await c.client.get("/console/fleet?tenant=nope")]
        for r in answers:
            csp = r.headers["content-security-policy"]
            assert "script-src 'self'" in csp
            assert "unsafe-inline" not in csp
            assert "frame-ancestors 'none'" in csp
            assert r.headers["x-frame-options"] == "DENY"
            assert r.headers["cache-control"] == "no-store"
        assert answers[-1].status_code == 404


async def test_a_post_needs_this_sessions_csrf_token_and_a_same_site_origin(make_console: Any) -> None:
    async for c in make_console():
        csrf = await c.login()
        form = {"csrf": csrf, "tenant": "default", "label": "x"}
        assert (await c.client.post("/console/tokens", data={**form, "csrf": "forged"})).status_code == 403
        assert (
            await c.client.post("/console/tokens", data={k: v for k, v in form.items() if k != "csrf"})
        ).status_code == 403
        for headers in (
            {"origin": "https://evil.example"},
            {"sec-fetch-site": "cross-site"},
            {"origin": "null"},
        ):
            assert (await c.client.post("/console/tokens", data=form, headers=headers)).status_code == 403
        assert c.tokens.list("default") == []
        same = {"origin": "http://127.0.0.1:8080", "sec-fetch-site": "same-origin"}
        ok = await c.client.post("/console/tokens", data=form, headers=same)
        assert ok.status_code == 303
        assert len(c.tokens.list("default")) == 1


async def test_a_post_that_is_not_a_small_url_encoded_form_is_refused(make_console: Any) -> None:
    async for c in make_console():
        csrf = await c.login()
        as_json = await c.client.post("/console/tokens", json={"csrf": csrf, "tenant": "default"})
        assert as_json.status_code == 400
        huge = await c.client.post(
            "/console/tokens", content=f"csrf={csrf}&label=" + "a" * 70_000, headers=FORM
        )
        assert huge.status_code == 400


async def test_a_created_token_is_shown_once_and_revoking_it_ends_it(make_console: Any) -> None:
    async for c in make_console():
        csrf = await c.login()
        created = await c.client.post(
            "/console/tokens",
            data={"csrf": csrf, "tenant": "default", "tier": "write", "expires_in": "2h", "label": "ci"},
        )
        # POST-redirect-GET: the secret is on the page redirected to, once.
        assert (created.status_code, created.headers["location"]) == (303, "/console/tokens?tenant=default")
        assert "fgt_" not in created.text
        [grant] = c.tokens.list("default")
        assert grant.tier == "write"
        assert grant.label == "ci"
        assert "fgt_" in (await c.client.get("/console/tokens")).text
        assert "fgt_" not in (await c.client.get("/console/tokens")).text
        assert len(c.tokens.list("default")) == 1
        r = await c.client.post(
            "/console/tokens/revoke", data={"csrf": csrf, "tenant": "default", "token_id": grant.token_id}
        )
        assert f"Revoked {grant.token_id}." in r.text
        assert c.tokens.list("default")[0].revoked


async def test_token_input_is_validated_before_anything_is_issued(make_console: Any) -> None:
    async for c in make_console():
        csrf = await c.login()
        for bad in ({"tier": "root"}, {"expires_in": "soon"}, {"scope__../etc": "1"}, {"label": "x" * 300}):
            r = await c.client.post("/console/tokens", data={"csrf": csrf, "tenant": "default", **bad})
            assert 'role="alert"' in r.text, bad
        assert c.tokens.list("default") == []
        revoke = await c.client.post(
            "/console/tokens/revoke", data={"csrf": csrf, "tenant": "default", "token_id": "0" * 16}
        )
        assert "no token" in revoke.text


async def _hold(c: Console, description: str | None, **changes: Any) -> tuple[str, str]:
    """Publish a catalog where crm:find_contact changed upstream (its description, or with None only
    the wire fields in ``changes``); returns (key, held hash)."""
    catalog = c.gateway.catalog("default")
    assert catalog is not None
    tool = catalog.by_key["crm:find_contact"]
    wire = {**tool.tool.to_wire(), **changes}
    if description is not None:
        wire["description"] = description
    rules = [{"rule": "exfiltration", "field": "description", "excerpt": "send"}]
    held = {
        "state": "changed",
        "hash": "a" * 64,
        "approved_hash": tool.tool.content_hash,
        "server": "crm",
        "tool": wire,
        "rules": rules,
    }
    newer: CatalogVersion = dataclasses.replace(
        catalog,
        version=catalog.version + "b",
        withheld={"crm:find_contact": held},
        approvals={"crm:find_contact": "changed"},
    )
    c.store.publish(newer, expected_current=catalog.version)
    c.gateway.invalidate("default")
    return "crm:find_contact", "a" * 64


async def test_the_approvals_page_shows_an_escaped_side_by_side_diff_and_the_rules_that_fired(
    make_console: Any,
) -> None:
    async for c in make_console():
        await c.login()
        await _hold(c, "Find contacts. <script>alert(1)</script>")
        page = (await c.client.get("/console/approvals")).text
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
        assert "<script>alert(1)" not in page
        assert 'class="changed"' in page
        assert "exfiltration" in page


@pytest.mark.parametrize(
    ("field", "label", "value", "shown"),
    [
        ("title", "Title", "Export every contact", "Export every contact"),
        ("annotations", "Annotations", {"destructiveHint": True}, '"destructiveHint": true'),
        ("outputSchema", "Output schema", {"type": "object", "required": ["ssn"]}, '"ssn"'),
        ("_meta", "_meta", {"ui": "https://evil.example/x"}, "https://evil.example/x"),
    ],
)
async def test_a_change_to_any_hashed_field_alone_is_shown_as_a_diff_of_that_field(
    make_console: Any, field: str, label: str, value: Any, shown: str
) -> None:
    async for c in make_console():
        await c.login()
        await _hold(c, None, **{field: value})
        page = (await c.client.get("/console/approvals")).text
        captions = re.findall(r"<caption>([^<:]+):", page)
        # Exactly the changed field, never an empty review of two bare hashes.
        assert captions == [label]
        # A changed line marks its changed words (<del>/<ins>): the cell's text is the line.
        cells = re.findall(r'<td class="r">(.*?)</td>', page)
        upstream_cells = [html.unescape(re.sub(r"</?(?:ins|del)>", "", cell)) for cell in cells]
        assert any(shown in cell for cell in upstream_cells), upstream_cells


async def test_approving_by_hash_records_it_and_reindexes_but_a_stale_hash_is_refused(
    make_console: Any,
) -> None:
    async for c in make_console():
        csrf = await c.login()
        key, digest = await _hold(c, "Find contacts, and more.")
        stale = await c.client.post(
            "/console/approvals", data={"csrf": csrf, "tenant": "default", "id": key, "hash": "b" * 64}
        )
        assert stale.status_code == 409
        assert c.deps.approvals is not None
        assert c.deps.approvals.approved("default") == {}
        bad = await c.client.post(
            "/console/approvals", data={"csrf": csrf, "tenant": "default", "id": key, "hash": "xyz"}
        )
        assert bad.status_code == 400
        ok = await c.client.post(
            "/console/approvals", data={"csrf": csrf, "tenant": "default", "id": key, "hash": digest}
        )
        assert ok.status_code == 200
        assert c.deps.approvals.approved("default") == {key: digest}
        assert c.reindexed == ["default"]


async def test_reindex_answers_htmx_with_a_progress_fragment_and_plain_forms_with_a_redirect(
    make_console: Any,
) -> None:
    async for c in make_console():
        csrf = await c.login()
        form = {"csrf": csrf, "tenant": "default"}
        fragment = await c.client.post("/console/fleet/reindex", data=form, headers={"hx-request": "true"})
        assert "Reindex finished" in fragment.text
        plain = await c.client.post("/console/fleet/reindex", data=form)
        assert plain.status_code == 303
        assert c.reindexed == ["default", "default"]
        assert (
            await c.client.post("/console/fleet/reindex", data={**form, "tenant": "../x"})
        ).status_code == 400


def _oauth_fleet() -> Any:
    """crm and tickets behind OAuth (shared and per-user), plus a static-header server."""
    servers = [
        {"name": "crm", "url": "http://127.0.0.1:9/crm/mcp", "auth": {"kind": "oauth"}},
        {"name": "tickets", "url": "http://127.0.0.1:9/tickets/mcp", "auth": {"kind": "per_user"}},
        {"name": "docs", "url": "http://127.0.0.1:9/docs/mcp", "headers": {"x-key": "k"}},
    ]
    return parse_tenant_config({"servers": servers})


async def test_the_connect_button_appears_only_with_a_connector_and_redirects_to_its_url(
    make_console: Any,
) -> None:
    async for c in make_console(config=_oauth_fleet()):
        await c.login()
        assert "Connect crm" not in (await c.client.get("/console/fleet")).text
    asked: list[tuple[str, str]] = []

    async def connector(tenant: str, server: str) -> str:
        asked.append((tenant, server))
        return "https://auth.example/authorize?x=1" if server == "crm" else "javascript:alert(1)"

    states = {
        "crm": {"kind": "oauth", "state": "needs_consent"},
        "tickets": {
            "kind": "per_user",
            "state": "needs_consent",
            "reason": "the upstream needs <more> scope",
        },
    }
    async for c in make_console(config=_oauth_fleet(), connector=connector, auth_states=lambda t: states):
        csrf = await c.login()
        fleet = (await c.client.get("/console/fleet")).text
        assert "Connect crm" in fleet
        assert "Connect tickets" in fleet
        assert "Connect docs" not in fleet  # static headers: nothing to connect
        assert "oauth: needs_consent" in fleet
        assert "per_user: needs_consent (the upstream needs &lt;more&gt; scope)" in fleet  # escaped
        go = await c.client.post(
            "/console/fleet/connect", data={"csrf": csrf, "tenant": "default", "server": "crm"}
        )
        assert go.status_code == 303
        assert go.headers["location"] == "https://auth.example/authorize?x=1"
        odd = await c.client.post(
            "/console/fleet/connect", data={"csrf": csrf, "tenant": "default", "server": "tickets"}
        )
        assert odd.status_code == 502
        unknown = await c.client.post(
            "/console/fleet/connect", data={"csrf": csrf, "tenant": "default", "server": "nope"}
        )
        assert unknown.status_code == 404
        assert asked == [("default", "crm"), ("default", "tickets")]


async def test_the_search_playground_runs_as_the_chosen_token_would(make_console: Any) -> None:
    async for c in make_console():
        await c.login()
        _, scoped = c.tokens.issue("default", servers=["tickets"], tier="read", expires_in=None)
        everyone = (await c.client.get("/console/search?query=contact")).text
        assert "crm__find_contact" in everyone
        # Compact hits carry no rank for agents (their position is it): the table numbers them 1, 2, …
        ranks = re.findall(r'<tr><td class="num">(\d+)</td><th scope="row">', everyone)
        assert ranks
        assert ranks == [str(i) for i in range(1, len(ranks) + 1)]
        scoped_page = (await c.client.get(f"/console/search?query=contact&token={scoped.token_id}")).text
        assert "crm__find_contact" not in scoped_page
        c.tokens.revoke(scoped.token_id)
        revoked = (await c.client.get(f"/console/search?query=contact&token={scoped.token_id}")).text
        assert "revoked or expired" in revoked


SAVED_YAML = """\
# The operator's notes.
servers:
  - name: crm
    url: http://127.0.0.1:9/crm/mcp
  - name: tickets   # the helpdesk
    url: http://127.0.0.1:9/tickets/mcp
direct_tool_response_mode: full  # for now
"""


def _totals(html: str) -> dict[str, int]:
    found = re.findall(r"<dt>([^<]+)</dt><dd>([\d,]+) tokens", html)
    return {label: int(number.replace(",", "")) for label, number in found}


async def test_the_what_if_is_saved_into_the_local_file_once_valid_and_current(
    make_console: Any, tmp_path: Path
) -> None:
    path = tmp_path / "foldgate.yaml"
    path.write_text(SAVED_YAML)
    source = FileConfigSource(path, max_age=3600.0)
    async for c in make_console(configs=source, config_file=str(path)):
        csrf = await c.login()
        before = await c.client.get("/console/budget?tenant=default")
        assert _totals(before.text)["Auto (current config)"] == _totals(before.text)["Full listing"]
        shown = await c.client.get(
            "/console/budget?tenant=default&wi_direct_tool_response_mode=deferred&wi_defer_threshold=20"
        )
        found = re.search(r'name="config_hash" value="([0-9a-f]{64})"', shown.text)
        assert found is not None
        assert "Save to foldgate.yaml" in shown.text
        form = {
            "csrf": csrf, "tenant": "default", "config_hash": found.group(1),
            "wi_direct_tool_response_mode": "deferred", "wi_defer_threshold": "20",
            "wi_listing_token_budget": "",
        }  # fmt: skip
        stale = await c.client.post("/console/budget/save", data={**form, "config_hash": "0" * 64})
        assert stale.status_code == 409
        assert "changed since this page was shown" in stale.text
        invalid = await c.client.post("/console/budget/save", data={**form, "wi_defer_threshold": "-3"})
        assert invalid.status_code == 400
        assert "defer_threshold" in invalid.text
        assert path.read_text() == SAVED_YAML
        saved = await c.client.post("/console/budget/save", data=form)
        assert saved.status_code == 303
        assert saved.headers["location"] == "/console/budget?tenant=default&saved=1"
        assert path.read_text() == SAVED_YAML.replace("full  # for now", "deferred  # for now")
        # The source reloaded at once (its cache would otherwise hold the old config for an hour).
        after = await c.client.get(saved.headers["location"])
        assert "Saved to" in after.text
        assert _totals(after.text)["Auto (current config)"] == _totals(after.text)["Deferred listing"]
        assert _totals(after.text)["Deferred listing"] < _totals(after.text)["Full listing"]
        # The old page's hash no longer matches the file: posting its form again is a conflict.
        assert (await c.client.post("/console/budget/save", data=form)).status_code == 409


async def test_without_a_local_config_file_there_is_no_save_only_the_json(make_console: Any) -> None:
    async for c in make_console():
        csrf = await c.login()
        shown = await c.client.get("/console/budget?tenant=default&wi_direct_tool_response_mode=deferred")
        assert "config_hash" not in shown.text
        assert "foldgate tenant apply" in shown.text
        form = {"csrf": csrf, "tenant": "default", "wi_direct_tool_response_mode": "deferred"}
        assert (await c.client.post("/console/budget/save", data=form)).status_code == 404
