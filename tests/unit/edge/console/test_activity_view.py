"""The Activity and Audit pages' view-models over a real SQLite activity store: the filters read from
hostile query parameters, newest-first pages with their older-page links, the live refresh's events
newer than the newest shown, every field of an expanded event, and one tenant's events only."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from urllib.parse import parse_qs

from foldgate.edge.console.activity import (
    EVENTS_PER_PAGE,
    activity_view,
    event_fields,
    newer_view,
    parse_filters,
    when,
)
from foldgate.edge.operator_audit import DEPLOYMENT
from foldgate.errors import StoreError
from foldgate.model.activity import ActivityEvent, ActivityRecord, Actor, AuditEvent
from foldgate.store.activity.base import ActivityPage, ActivityQuery, StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore

NOW = time.time()


def call(i: int, tenant: str = "acme", **fields: object) -> ActivityEvent:
    """The i-th call event, i seconds after an hour ago."""
    values: dict[str, object] = {
        "tenant": tenant,
        "method": "tools/call",
        "surface": "mcp",
        "outcome": "ok",
        "at": NOW - 3600 + i,
        "server": "crm",
        "tool": "find_contact",
        "principal": "tok_1",
        "gateway_ms": 12.5,
    } | fields
    return ActivityEvent(**values).with_id()  # type: ignore[arg-type]


def stored(*records: ActivityRecord) -> SqliteActivityStore:
    store = SqliteActivityStore(":memory:")
    store.put_many([StoredRecord(r, NOW + 86400) for r in records])
    return store


def test_filters_take_the_apis_names_and_drop_a_bad_value_with_a_message() -> None:
    f, error = parse_filters({"server": " crm ", "tool": "t", "principal": "tok_9", "outcome": "denied"})
    assert (f.server, f.tool, f.principal, f.outcome, error) == ("crm", "t", "tok_9", "denied", None)
    ten = datetime(2026, 12, 1, 10, tzinfo=UTC).timestamp()
    f, error = parse_filters({"since": "2026-12-01T10:00", "until": "1764590400.5"})
    assert f.since == ten
    assert f.until == 1764590400.5
    assert error is None
    # A time naming its offset is taken as it says; one without is UTC (the form's label says so).
    f, error = parse_filters({"since": "2026-12-01T10:00:00+01:00"})
    assert f.since == ten - 3600
    for bad in ({"outcome": "pwned"}, {"since": "yesterday"}, {"until": "nan"}, {"server": "x" * 513}):
        f, error = parse_filters(bad)
        assert error is not None, bad
        assert (f.server, f.outcome, f.since, f.until) == ("", "", None, None)
    # An operator event's outcomes are its own.
    assert parse_filters({"outcome": "refused"}, "audit")[1] is None
    assert parse_filters({"outcome": "tool_error"}, "audit")[1] is not None


def test_a_page_is_one_tenants_events_newest_first_with_a_link_to_the_older_ones() -> None:
    events = [call(i) for i in range(EVENTS_PER_PAGE + 5)]
    store = stored(*events, call(500, tenant="other", tool="other_tool"))
    first = activity_view(store, "acme", {})
    assert [r["id"] for r in first["rows"]] == [e.event_id for e in reversed(events)][:EVENTS_PER_PAGE]
    older = parse_qs(first["older"])
    assert older["tenant"] == ["acme"]
    second = activity_view(store, "acme", {k: v[0] for k, v in older.items()})
    assert [r["id"] for r in second["rows"]] == [e.event_id for e in reversed(events[:5])]
    assert second["older"] is None
    # Only the first page refreshes itself, from its newest event.
    assert parse_qs(first["live"])["after"] == [events[-1].event_id]
    assert second["live"] is None
    assert all(r["tool"] != "other_tool" for r in first["rows"] + second["rows"])


def test_filters_narrow_the_page_and_stay_in_its_links() -> None:
    store = stored(
        call(1, server="crm", outcome="ok"),
        call(2, server="crm", outcome="tool_error"),
        call(3, server="git", outcome="tool_error"),
        call(4, server="crm", outcome="tool_error", at=NOW - 10),
    )
    params = {"server": "crm", "outcome": "tool_error", "until": str(NOW - 60)}
    model = activity_view(store, "acme", params)
    assert [(r["server"], r["outcome"]) for r in model["rows"]] == [("crm", "tool_error")]
    live = parse_qs(model["live"])
    assert (live["server"], live["outcome"]) == (["crm"], ["tool_error"])
    assert "until" in live


def test_a_cursor_of_another_tenants_listing_is_refused_not_followed() -> None:
    store = stored(*(call(i, tenant="other") for i in range(EVENTS_PER_PAGE + 1)), call(1))
    theirs = parse_qs(activity_view(store, "other", {})["older"])["cursor"][0]
    model = activity_view(store, "acme", {"cursor": theirs})
    assert model["rows"] == []
    assert "cursor" in model["error"]


def test_the_live_refresh_gives_only_events_newer_than_the_newest_shown_under_the_same_filters() -> None:
    shown = call(1)
    store = stored(shown)
    page = activity_view(store, "acme", {"server": "crm"})
    poll = {k: v[0] for k, v in parse_qs(page["live"]).items()}
    assert newer_view(store, "acme", poll)["rows"] == []
    fresh = call(2)
    store.put_many([
        StoredRecord(r, NOW + 86400)
        for r in (fresh, call(3, server="git"), call(4, tenant="other"))
    ])  # fmt: skip
    model = newer_view(store, "acme", poll)
    assert [r["id"] for r in model["rows"]] == [fresh.event_id]
    assert parse_qs(model["live"])["after"] == [fresh.event_id]
    assert parse_qs(model["live"])["server"] == ["crm"]
    # An event in the same millisecond as the newest shown (a greater id) is new; the shown one is not.
    twin = replace(fresh, event_id=fresh.event_id[:14] + "f" * 12)
    store.put_many([StoredRecord(twin, NOW + 86400)])
    again = newer_view(store, "acme", {k: v[0] for k, v in parse_qs(model["live"]).items()})
    assert [r["id"] for r in again["rows"]] == [twin.event_id]


def test_the_live_refresh_refuses_an_after_that_is_not_an_event_id() -> None:
    store = stored(call(1))
    for after in ("x", "9" * 13, "' OR 1=1 --"):
        assert newer_view(store, "acme", {"after": after})["live"] is None


def test_an_expanded_event_shows_every_field_and_arguments_only_as_the_tenant_recorded_them() -> None:
    event = call(1, client_name="<img src=x onerror=alert(1)>", arguments={"query": "<redacted:str>"})
    names = [name for name, _ in event_fields(event)]
    assert names == [n for n in event.to_doc() if n != "kind"]
    shown = dict(event_fields(event))
    assert shown["client_name"] == "<img src=x onerror=alert(1)>"
    assert shown["upstream_ms"] == "—"
    assert shown["cut_to_read_cache"] == "no"
    assert '"query": "<redacted:str>"' in shown["arguments"]
    big = dict(event_fields(call(1, arguments={"k": "v" * 10_000})))["arguments"]
    assert len(big) < 4100
    assert big.endswith("more characters)")


def test_an_audit_page_lists_operator_events_with_actor_target_and_filters() -> None:
    console, refused = Actor("console", "operator", "127.0.0.1"), Actor("console", "", "10.0.0.9")
    store = stored(
        AuditEvent("acme", "token.create", console, at=NOW - 50, target="tok_1"),
        AuditEvent("acme", "console.sign_in_refused", refused, at=NOW - 40, outcome="refused"),
        AuditEvent("other", "token.revoke", Actor("cli"), at=NOW - 30, target="tok_2"),
        call(1),
    )
    model = activity_view(store, "acme", {}, kind="audit")
    assert [(r["action"], r["actor"], r["source"], r["outcome"]) for r in model["rows"]] == [
        ("console.sign_in_refused", "console", "10.0.0.9", "refused"),
        ("token.create", "console operator", "127.0.0.1", "ok"),
    ]
    assert model["live"] is None
    refused = activity_view(store, "acme", {"outcome": "refused"}, kind="audit")
    assert [r["action"] for r in refused["rows"]] == ["console.sign_in_refused"]
    targeted = activity_view(store, "acme", {"server": "tok_1"}, kind="audit")
    assert [r["target"] for r in targeted["rows"]] == ["tok_1"]


class Failing(SqliteActivityStore):
    def query(self, query: ActivityQuery) -> ActivityPage:
        raise StoreError("disk I/O error")


def test_a_store_that_cannot_be_read_is_a_message_on_the_page_and_the_live_refresh_keeps_polling() -> None:
    store = Failing(":memory:")
    model = activity_view(store, "acme", {})
    assert model["rows"] == []
    assert "cannot be read now" in model["error"]
    after = call(1).event_id
    assert parse_qs(newer_view(store, "acme", {"after": after})["live"])["after"] == [after]
    assert activity_view(None, "acme", {})["available"] is False


def test_more_new_events_than_a_page_say_so_with_a_reload_link_that_keeps_the_filters() -> None:
    shown = call(1)
    store = stored(shown)
    poll = {k: v[0] for k, v in parse_qs(activity_view(store, "acme", {"server": "crm"})["live"]).items()}
    store.put_many([StoredRecord(call(10 + i), NOW + 86400) for i in range(EVENTS_PER_PAGE + 1)])
    model = newer_view(store, "acme", poll)
    assert len(model["rows"]) == EVENTS_PER_PAGE
    assert model["more"] is True
    assert parse_qs(model["reload"]) == {"tenant": ["acme"], "server": ["crm"]}
    store.put_many([StoredRecord(call(100), NOW + 86400)])
    assert newer_view(store, "acme", {k: v[0] for k, v in parse_qs(model["live"]).items()})["more"] is False


def test_a_stored_time_no_calendar_holds_is_shown_as_it_is_not_a_failed_page() -> None:
    for odd in (float("nan"), 1e20, -1e20):
        assert when(odd) == str(odd)
    far = replace(call(1), at=1e20)
    [row] = activity_view(stored(far), "acme", {})["rows"]
    assert row["when"] == "1e+20"
    assert dict(row["fields"])["at"] == "1e+20 (100000000000000000000.000)"


def test_the_consoles_own_events_are_of_no_one_tenant_and_listed_only_when_asked() -> None:
    signed_in = AuditEvent(DEPLOYMENT, "console.sign_in", Actor("console", "s-1", "127.0.0.1"), at=NOW - 20)
    store = stored(
        *(replace(signed_in, at=NOW - 100 - i).with_id() for i in range(EVENTS_PER_PAGE)),
        signed_in.with_id(),
        AuditEvent("acme", "token.create", Actor("console", "s-1"), at=NOW - 10),
    )
    tenants = activity_view(store, "acme", {}, kind="audit")
    assert [r["action"] for r in tenants["rows"]] == ["token.create"]
    console = activity_view(store, "acme", {}, kind="audit", deployment=True)
    assert console["rows"][0]["action"] == "console.sign_in"
    assert {r["action"] for r in console["rows"]} == {"console.sign_in"}
    assert console["deployment"] is True
    older = parse_qs(console["older"])
    assert (older["tenant"], older["scope"]) == (["acme"], ["deployment"])
    rest = activity_view(store, "acme", {k: v[0] for k, v in older.items()}, kind="audit", deployment=True)
    assert len(rest["rows"]) == 1
    assert parse_qs(rest["newest"])["scope"] == ["deployment"]
