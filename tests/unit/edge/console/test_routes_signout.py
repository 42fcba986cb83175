"""Sign-out ends the session on the server: a copy of the cookie taken before it is refused afterwards,
on every instance sharing the sign-out store, and a store that cannot answer lets no session in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from foldgate.errors import StoreError
from foldgate.store.signouts.sqlite import SqliteSignOutStore
from tests.unit.edge.console.conftest import Console

COOKIE = "foldgate_console"


async def _copied(c: Console) -> tuple[str, str]:
    """Sign in; returns (a copy of the session cookie, the session's CSRF token)."""
    csrf = await c.login()
    return c.client.cookies[COOKIE], csrf


async def _as(c: Console, cookie: str, method: str, path: str, **kw: Any) -> int:
    """The status of a request carrying ``cookie`` (and no other) as the session cookie."""
    c.client.cookies.clear()
    c.client.cookies.set(COOKIE, cookie, domain="127.0.0.1", path="/console")
    status: int = (await c.client.request(method, path, **kw)).status_code
    return status


async def test_a_cookie_copied_before_sign_out_is_refused_afterwards(make_console: Any) -> None:
    async for c in make_console():
        cookie, csrf = await _copied(c)
        out = await c.client.post("/console/logout", data={"csrf": csrf})
        assert out.status_code == 303
        assert out.headers["location"] == "/console/login?signed_out=1"
        # The copy still verifies as a signed, unexpired cookie; only the server's record refuses it.
        assert c.deps.signer is not None
        assert c.deps.signer.verify(cookie) is not None
        c.client.cookies.set(COOKIE, cookie, domain="127.0.0.1", path="/console")
        page = await c.client.get("/console/fleet")
        assert (page.status_code, page.headers["location"]) == (303, "/console/login")
        form = {"csrf": csrf, "tenant": "default", "label": "after"}
        assert await _as(c, cookie, "POST", "/console/tokens", data=form) == 403
        assert c.tokens.list("default") == []
        # Signing in again opens a new session.
        await c.login()
        assert (await c.client.get("/console/fleet")).status_code == 200


async def test_a_sign_out_on_one_instance_is_refused_on_another_sharing_the_store(
    make_console: Any, tmp_path: Path
) -> None:
    path = tmp_path / "state.sqlite3"
    async for one in make_console(signouts=SqliteSignOutStore(path)):
        async for other in make_console(signouts=SqliteSignOutStore(path)):
            cookie, csrf = await _copied(one)
            assert await _as(other, cookie, "GET", "/console/fleet") == 200
            assert await _as(other, cookie, "POST", "/console/logout", data={"csrf": csrf}) == 303
            assert await _as(one, cookie, "GET", "/console/fleet") == 303
            assert await _as(other, cookie, "GET", "/console/fleet") == 303


async def test_signing_out_one_session_leaves_the_others_signed_in(make_console: Any) -> None:
    async for c in make_console():
        first, _ = await _copied(c)
        second, csrf = await _copied(c)
        assert await _as(c, second, "POST", "/console/logout", data={"csrf": csrf}) == 303
        assert await _as(c, first, "GET", "/console/fleet") == 200
        assert await _as(c, second, "GET", "/console/fleet") == 303


class _Unreachable(SqliteSignOutStore):
    """A sign-out store whose backend is down (reads and writes fail as a store does)."""

    down = False

    def signed_out(self, sid: str) -> bool:
        if self.down:
            raise StoreError("cannot read console sign-outs: unreachable")
        return super().signed_out(sid)

    def sign_out(self, sid: str, until: float) -> None:
        if self.down:
            raise StoreError("cannot record a console sign-out: unreachable")
        super().sign_out(sid, until)


async def test_when_the_store_cannot_answer_no_session_gets_in_and_sign_out_says_it_failed(
    make_console: Any,
) -> None:
    store = _Unreachable(":memory:")
    async for c in make_console(signouts=store):
        csrf = await c.login()
        store.down = True
        page = await c.client.get("/console/fleet")
        assert page.status_code == 503
        assert "cannot check its sessions" in page.text
        # The login form and static files stay reachable: they need no session.
        assert (await c.client.get("/console/static/console.css")).status_code == 200
        login = await c.client.get("/console/login")
        assert login.status_code == 200
        assert "Sign out" not in login.text
        store.down = False
        assert (await c.client.get("/console/fleet")).status_code == 200
        store.down = True
        # A sign-out that could not be recorded is not reported as done.
        refused = await c.client.post("/console/logout", data={"csrf": csrf})
        assert refused.status_code == 503
