"""The approvals page's Reject: a CSRF-protected POST of the reviewed hash beside Approve (stale hash
refused, recorded and reindexed otherwise), and rejected tools listed in their own section with only
an Approve button."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from foldgate.model.catalog import CatalogVersion
from tests.unit.edge.console.conftest import Console

KEY, DIGEST = "crm:find_contact", "a" * 64


async def hold(c: Console, state: str) -> None:
    """Publish a catalog where crm:find_contact's upstream content is held in ``state``."""
    catalog = c.gateway.catalog("default")
    assert catalog is not None
    tool = catalog.by_key[KEY]
    held = {
        "state": state,
        "hash": DIGEST,
        "approved_hash": tool.tool.content_hash,
        "server": "crm",
        "tool": {**tool.tool.to_wire(), "description": "Find contacts, then mail them out."},
        "rules": [],
    }
    newer: CatalogVersion = dataclasses.replace(
        catalog, version=catalog.version + "r", withheld={KEY: held}, approvals={KEY: "changed"}
    )
    c.store.publish(newer, expected_current=catalog.version)
    c.gateway.invalidate("default")


def sections(page: str) -> dict[str, str]:
    """The page's h2 sections by heading text."""
    parts = re.split(r'<h2 id="[^"]+">', page)
    return {p.split("</h2>", 1)[0]: p for p in parts[1:]}


async def test_rejecting_by_hash_records_it_and_reindexes_but_a_stale_hash_is_refused(
    make_console: Any,
) -> None:
    async for c in make_console():
        csrf = await c.login()
        await hold(c, "changed")
        form = {"csrf": csrf, "tenant": "default", "id": KEY}
        stale = await c.client.post("/console/approvals/reject", data={**form, "hash": "b" * 64})
        assert stale.status_code == 409
        assert "changed since it was reviewed" in stale.text
        assert c.deps.approvals is not None
        assert c.deps.approvals.rejected("default") == {}
        bad = await c.client.post("/console/approvals/reject", data={**form, "hash": "xyz"})
        assert bad.status_code == 400
        ok = await c.client.post("/console/approvals/reject", data={**form, "hash": DIGEST})
        assert ok.status_code == 200
        assert "Rejected crm__find_contact" in ok.text
        assert c.deps.approvals.rejected("default") == {KEY: DIGEST}
        assert c.deps.approvals.approved("default") == {}
        assert c.reindexed == ["default"]


async def test_reject_needs_this_sessions_csrf_token(make_console: Any) -> None:
    async for c in make_console():
        await c.login()
        await hold(c, "changed")
        form = {"tenant": "default", "id": KEY, "hash": DIGEST}
        assert (
            await c.client.post("/console/approvals/reject", data={**form, "csrf": "forged"})
        ).status_code == 403
        assert (await c.client.post("/console/approvals/reject", data=form)).status_code == 403
        assert c.deps.approvals is not None
        assert c.deps.approvals.rejected("default") == {}


async def test_awaiting_tools_offer_reject_and_rejected_ones_have_their_own_section(
    make_console: Any,
) -> None:
    async for c in make_console():
        await c.login()
        await hold(c, "changed")
        awaiting = sections((await c.client.get("/console/approvals")).text)
        assert list(awaiting) == ["Awaiting review"]
        assert 'formaction="/console/approvals/reject"' in awaiting["Awaiting review"]
        assert "Reject crm__find_contact" in awaiting["Awaiting review"]

        await hold(c, "rejected")
        page = sections((await c.client.get("/console/approvals")).text)
        assert list(page) == ["Awaiting review", "Rejected"]
        assert "Nothing awaits approval." in page["Awaiting review"]
        assert "crm__find_contact" in page["Rejected"]
        assert "Approve crm__find_contact" in page["Rejected"]  # a rejection can still be undone
        assert "Reject crm__find_contact" not in page["Rejected"]
        assert 'class="state-rejected"' in page["Rejected"]
        fleet = (await c.client.get("/console/fleet")).text
        assert 'none; <a href="/console/approvals?tenant=default#rejected">1 rejected</a>' in fleet
