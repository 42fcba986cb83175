"""The ActivityStore contract, run over every backend alike: a tenant's events newest first, filtered,
paginated by a cursor bound to that tenant, expired events never returned, and one tenant's events
never visible to another."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from foldgate.errors import InvalidRequestError
from foldgate.model.activity import ActivityEvent, ActivityRecord, Actor, AuditEvent
from foldgate.store.activity.base import ActivityQuery, ActivityStore, StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore
from tests.integration.store.activity.backends import ACTIVITY_BACKENDS, open_activity_backend

NOW = time.time()


@pytest.fixture(params=ACTIVITY_BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ActivityStore]:
    yield from open_activity_backend(request, tmp_path)


def call(i: int, tenant: str = "acme", **fields: object) -> ActivityEvent:
    """The i-th call event, one millisecond apart, with an id of its own (the same for the same i)."""
    values: dict[str, object] = {
        "tenant": tenant,
        "method": "tools/call",
        "surface": "mcp",
        "outcome": "ok",
        "at": NOW - 3600 + i / 1000,
        "server": "github",
        "tool": "search_issues",
        "principal": "tok_1",
        "gateway_ms": 1.5 + i,
        "upstream_ms": 1.0 + i,
    } | fields
    event = ActivityEvent(**values)  # type: ignore[arg-type]
    return replace(event, event_id=f"{int(event.at * 1000):013d}-{i:012x}")


def kept(*records: ActivityRecord, ttl: float = 3600) -> list[StoredRecord]:
    return [StoredRecord(r, NOW + ttl) for r in records]


def everything(store: ActivityStore, query: ActivityQuery) -> list[ActivityRecord]:
    """Every record of a listing, following cursors (and never the same cursor twice)."""
    out: list[ActivityRecord] = []
    seen: set[str | None] = set()
    while True:
        page = store.query(query)
        out.extend(page.records)
        if page.cursor is None:
            return out
        assert page.cursor not in seen
        seen.add(page.cursor)
        query = replace(query, cursor=page.cursor)


def test_events_come_back_whole_and_newest_first(store: ActivityStore) -> None:
    events = [call(i) for i in range(5)]
    store.put_many(kept(*events[:2]))
    store.put_many(kept(*events[2:]))
    page = store.query(ActivityQuery("acme"))
    assert page.records == list(reversed(events))
    assert page.cursor is None


def test_pages_follow_the_cursor_through_every_event_exactly_once(store: ActivityStore) -> None:
    events = [call(i) for i in range(23)]
    store.put_many(kept(*events))
    first = store.query(ActivityQuery("acme", limit=10))
    assert len(first.records) == 10
    assert first.cursor
    assert everything(store, ActivityQuery("acme", limit=10)) == list(reversed(events))


def test_a_tenants_events_are_never_listed_for_another(store: ActivityStore) -> None:
    store.put_many(kept(call(1, "acme"), call(2, "globex"), call(3, "acme-2")))
    assert [r.tenant for r in everything(store, ActivityQuery("acme"))] == ["acme"]
    assert [r.tenant for r in everything(store, ActivityQuery("globex"))] == ["globex"]
    assert everything(store, ActivityQuery("initech")) == []


def test_a_cursor_issued_for_one_tenant_is_refused_for_another(store: ActivityStore) -> None:
    store.put_many(kept(*[call(i, "acme") for i in range(3)], *[call(i, "globex") for i in range(3)]))
    cursor = store.query(ActivityQuery("acme", limit=1)).cursor
    assert cursor is not None
    with pytest.raises(InvalidRequestError, match="cursor"):
        store.query(ActivityQuery("globex", cursor=cursor))
    with pytest.raises(InvalidRequestError, match="cursor"):
        store.query(ActivityQuery("acme", kind="audit", cursor=cursor))


@pytest.mark.parametrize("cursor", ["not-base64!", "e30", "x" * 600, "eyJ0IjoiYWNtZSJ9"])
def test_a_malformed_cursor_is_refused(store: ActivityStore, cursor: str) -> None:
    with pytest.raises(InvalidRequestError, match="cursor"):
        store.query(ActivityQuery("acme", cursor=cursor))


@pytest.mark.parametrize("changes", [{"kind": "other"}, {"limit": 0}, {"limit": 1001}])
def test_a_query_out_of_bounds_is_refused(store: ActivityStore, changes: dict[str, object]) -> None:
    with pytest.raises(InvalidRequestError):
        store.query(replace(ActivityQuery("acme"), **changes))  # type: ignore[arg-type]


def test_operator_events_are_listed_apart_from_calls(store: ActivityStore) -> None:
    audit = AuditEvent(
        "acme", "token.create", Actor("console", "ops@acme", "10.0.0.1"), at=NOW - 10, target="tok_9"
    ).with_id()
    store.put_many(kept(call(1), audit))
    assert store.query(ActivityQuery("acme", kind="audit")).records == [audit]
    assert store.query(ActivityQuery("acme")).records == [call(1)]
    # An operator event's actor is its principal and its target its server / tool.
    assert store.query(ActivityQuery("acme", kind="audit", principal="ops@acme", tool="tok_9")).records == [
        audit
    ]
    assert store.query(ActivityQuery("acme", kind="audit", principal="someone")).records == []


def test_each_filter_narrows_the_listing(store: ActivityStore) -> None:
    a = call(1, server="github", tool="search_issues", principal="tok_1", outcome="ok")
    b = call(2, server="github", tool="create_issue", principal="tok_2", outcome="tool_error")
    c = call(3, server="jira", tool="search_issues", principal="tok_1", outcome="upstream_timeout")
    store.put_many(kept(a, b, c))

    def ids(**filters: object) -> list[str]:
        return [r.event_id for r in everything(store, ActivityQuery("acme", **filters))]  # type: ignore[arg-type]

    assert ids(server="github") == [b.event_id, a.event_id]
    assert ids(tool="search_issues") == [c.event_id, a.event_id]
    assert ids(principal="tok_2") == [b.event_id]
    assert ids(outcome="upstream_timeout") == [c.event_id]
    assert ids(server="github", principal="tok_1") == [a.event_id]
    assert ids(server="nope") == []


def test_since_is_inclusive_and_until_exclusive(store: ActivityStore) -> None:
    events = [call(i * 1000) for i in range(5)]  # one second apart
    store.put_many(kept(*events))
    ats = [e.at for e in events]
    listed = everything(store, ActivityQuery("acme", since=ats[1], until=ats[3]))
    assert listed == [events[2], events[1]]
    # Bounds inside one millisecond are exact too (ids carry only the millisecond).
    listed = everything(store, ActivityQuery("acme", since=ats[2] + 0.0004))
    assert listed == [events[4], events[3]]
    listed = everything(store, ActivityQuery("acme", until=ats[2] + 0.0004))
    assert listed == [events[2], events[1], events[0]]


def test_a_filtered_listing_fills_its_pages(store: ActivityStore) -> None:
    """Matches scattered among many other events still come a full page at a time."""
    events = [call(i, outcome="tool_error" if i % 20 == 0 else "ok") for i in range(300)]
    store.put_many(kept(*events))
    page = store.query(ActivityQuery("acme", outcome="tool_error", limit=5))
    assert [r.event_id for r in page.records] == [e.event_id for e in reversed(events) if e.outcome != "ok"][
        :5
    ]
    listed = everything(store, ActivityQuery("acme", outcome="tool_error", limit=5))
    assert len(listed) == 15
    assert all(r.outcome == "tool_error" for r in listed)


def test_expired_events_are_never_returned(store: ActivityStore) -> None:
    store.put_many([StoredRecord(call(1), NOW - 1), StoredRecord(call(2), NOW + 3600)])
    assert store.query(ActivityQuery("acme")).records == [call(2)]


def test_writing_an_event_twice_keeps_one_copy(store: ActivityStore) -> None:
    store.put_many(kept(call(1)))
    store.put_many(kept(call(1), call(2)))
    assert everything(store, ActivityQuery("acme")) == [call(2), call(1)]


def test_an_event_without_an_id_gets_one_that_sorts_by_time(store: ActivityStore) -> None:
    older = ActivityEvent("acme", "tools/call", "mcp", "ok", at=NOW - 5)
    newer = ActivityEvent("acme", "tools/call", "mcp", "ok", at=NOW - 1)
    store.put_many(kept(newer, older))
    listed = store.query(ActivityQuery("acme")).records
    assert [r.at for r in listed] == [newer.at, older.at]
    assert all(r.event_id for r in listed)


def test_sqlite_deletes_expired_rows_when_it_writes(tmp_path: Path) -> None:
    import sqlite3

    store = SqliteActivityStore(tmp_path / "a.sqlite3")
    try:
        store.put_many([StoredRecord(call(1), NOW - 1), StoredRecord(call(2), NOW + 3600)])
        store.put_many(kept(call(3)))
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "a.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM activity").fetchone() == (2,)


def test_odd_events_are_stored_trimmed_and_never_fail_their_batch(store: ActivityStore) -> None:
    """A 1 MB detail, arguments JSON cannot sort and a 100,000-character client name: DynamoDB would
    refuse the item (400 KB) and with it the whole batch of 25."""
    plain = call(1)
    long_detail = call(2, outcome="upstream_error", detail="x" * 1_000_000, arguments={"k": "v" * 100_000})
    mixed_keys = call(3, arguments={1: "a", "b": 2})
    long_name = call(4, client_name="c" * 100_000, tool="t" * 5000)
    store.put_many(kept(plain, long_detail, mixed_keys, long_name))
    listed = {r.event_id: r for r in everything(store, ActivityQuery("acme"))}
    assert len(listed) == 4
    assert listed[plain.event_id] == plain
    trimmed = listed[long_detail.event_id]
    assert isinstance(trimmed, ActivityEvent)
    assert (trimmed.detail, trimmed.arguments, trimmed.outcome) == ("x" * 1000, None, "upstream_error")
    assert listed[mixed_keys.event_id].arguments is None  # type: ignore[union-attr]
    assert len(listed[long_name.event_id].client_name) <= 256  # type: ignore[union-attr]


def test_the_guards_counts_come_back_and_nothing_else_stored_there(store: ActivityStore) -> None:
    """An event's result-guard findings (counts by rule id) round-trip in every backend; a stored
    document holding anything but counts there reads back without it."""
    found = call(1, guard={"aws_access_key": 2, "instruction-override": 1})
    odd = call(2, guard={"aws_access_key": "AKIA...", "ok": True, "n": 1})
    junk = call(3, guard=["not", "counts"])
    store.put_many(kept(found, odd, junk))
    listed = {r.event_id: r for r in everything(store, ActivityQuery("acme"))}
    assert listed[found.event_id].guard == {"aws_access_key": 2, "instruction-override": 1}  # type: ignore[union-attr]
    assert listed[odd.event_id].guard == {"n": 1}  # type: ignore[union-attr]
    assert listed[junk.event_id].guard is None  # type: ignore[union-attr]
