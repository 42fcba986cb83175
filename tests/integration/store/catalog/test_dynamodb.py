"""DynamoStore against a real moto_server on loopback, with the table template.yaml deploys.

Pins what readers and racing indexers rely on: versions are all-or-nothing, the pointer is a
compare-and-set, throttled or partial writes never become current, TTL marks what may be deleted.
"""

from __future__ import annotations

import json
import random
import string
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from foldgate.app.wiring import open_store
from foldgate.config.settings import Settings
from foldgate.dev.corpus import load_catalog
from foldgate.errors import ConfigError, ConflictError, StoreError
from foldgate.index.indexer import catalog_from_tools
from foldgate.model.catalog import CatalogVersion
from foldgate.model.tool import Tool
from foldgate.store.catalog.base import CatalogStore, encode_catalog
from foldgate.store.catalog.dynamodb import DynamoStore
from foldgate.store.catalog.sqlite import SqliteStore
from tests.conftest import corpus_path
from tests.integration.store.backends import BACKENDS, open_backend

REPO = Path(__file__).resolve().parents[4]
TENANT = "acme"


def noise(rng: random.Random, n: int) -> str:
    """Text that zlib cannot shrink much (so sizes in bytes really become chunks)."""
    return "".join(rng.choices(string.ascii_letters + string.digits, k=n))


def tools(n: int, *, server: str = "svc", text: int = 40, seed: int = 0) -> list[Tool]:
    rng = random.Random(seed)
    return [
        Tool(
            server=server,
            name=f"tool_{i}",
            description=noise(rng, text),
            input_schema={"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
            annotations={"readOnlyHint": i % 2 == 0},
        )
        for i in range(n)
    ]


def catalog(tool_list: list[Tool], tenant: str = TENANT) -> CatalogVersion:
    return catalog_from_tools(tenant, tool_list)


def chunk_items(store: DynamoStore, version: str, tenant: str = TENANT) -> list[dict[str, Any]]:
    resp = store.client.query(
        TableName=store.table_name,
        KeyConditionExpression="pk = :pk AND begins_with(sk, :p)",
        ExpressionAttributeValues={":pk": {"S": f"TENANT#{tenant}"}, ":p": {"S": f"VERSION#{version}#"}},
        ConsistentRead=True,
    )
    items: list[dict[str, Any]] = resp["Items"]
    return items


def manifest(store: DynamoStore, version: str, tenant: str = TENANT) -> dict[str, Any] | None:
    key = {"pk": {"S": f"TENANT#{tenant}"}, "sk": {"S": f"MANIFEST#{version}"}}
    item: dict[str, Any] | None = store.client.get_item(TableName=store.table_name, Key=key).get("Item")
    return item


def expiry_of(store: DynamoStore, version: str) -> list[int | None]:
    """expires_at of the version's manifest, then of each chunk (None: not marked)."""
    items = [manifest(store, version), *chunk_items(store, version)]
    return [None if it is None or "expires_at" not in it else int(it["expires_at"]["N"]) for it in items]


def transactions(store: DynamoStore) -> list[list[dict[str, Any]]]:
    """The TransactItems of every TransactWriteItems the store's client sends, as sent on the wire."""
    sent: list[list[dict[str, Any]]] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        sent.append(json.loads(params["body"])["TransactItems"])

    store.client.meta.events.register("before-call.dynamodb.TransactWriteItems", capture)
    return sent


def pointer(store: DynamoStore, tenant: str = TENANT) -> dict[str, Any]:
    resp = store.client.get_item(
        TableName=store.table_name, Key={"pk": {"S": f"TENANT#{tenant}"}, "sk": {"S": "CURRENT"}}
    )
    item: dict[str, Any] = resp["Item"]
    return item


def set_attr(store: DynamoStore, item: dict[str, Any], name: str, value: dict[str, Any]) -> None:
    store.client.update_item(
        TableName=store.table_name,
        Key={"pk": item["pk"], "sk": item["sk"]},
        UpdateExpression="SET #a = :v",
        ExpressionAttributeNames={"#a": name},
        ExpressionAttributeValues={":v": value},
    )


@pytest.fixture
def dynamo(dynamo_table: str) -> DynamoStore:
    store = DynamoStore(dynamo_table)
    store.backoff_base = 0.001  # keep bounded retries fast
    return store


@pytest.fixture(params=BACKENDS)
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CatalogStore]:
    yield from open_backend(request, tmp_path, SqliteStore, DynamoStore)


# -- the contract both stores honour ---------------------------------------------------------------


def test_store_contract(any_store: CatalogStore) -> None:
    assert any_store.current_version(TENANT) is None
    assert any_store.load_current(TENANT) is None
    assert any_store.tenants() == []

    v1 = catalog(tools(3, seed=1))
    any_store.publish(v1, expected_current=None)
    assert any_store.current_version(TENANT) == v1.version
    loaded = any_store.load_current(TENANT)
    assert loaded is not None
    assert loaded.to_doc() == v1.to_doc()

    v2 = catalog(tools(4, seed=2))
    any_store.publish(v2, expected_current=v1.version)
    assert any_store.current_version(TENANT) == v2.version

    stale = catalog(tools(5, seed=3))
    with pytest.raises(ConflictError, match=v2.version):
        any_store.publish(stale, expected_current=v1.version)
    with pytest.raises(ConflictError, match=v2.version):
        any_store.publish(stale, expected_current=None)  # lost the first-publish race
    assert any_store.current_version(TENANT) == v2.version

    assert any_store.load_version(TENANT, "v-unknown") is None
    assert any_store.load_version("nobody", v2.version) is None
    old = any_store.load_version(TENANT, v1.version)  # superseded, still readable (keep / grace)
    assert old is not None
    assert old.version == v1.version

    any_store.publish(catalog(tools(1), tenant="beta"), expected_current=None)
    assert any_store.tenants() == [TENANT, "beta"]


# -- DynamoDB specifics ----------------------------------------------------------------------------


def test_round_trip_of_a_real_catalog(dynamo: DynamoStore) -> None:
    real = load_catalog(REPO / "demo" / "catalog.jsonl")
    extra = Tool(
        server="crm",
        name="ünïcode_tool",
        description="Beschreibung mit Umlauten — and emoji 🚀",
        input_schema={"type": "object", "properties": {"n": {"type": "number", "exclusiveMinimum": 0}}},
        title="Unicode",
        output_schema={"type": "object"},
        annotations={"destructiveHint": True},
        meta={"vendor/x": [1, 2, 3]},
    )
    original = catalog([*real, extra])
    dynamo.publish(original, expected_current=None)
    loaded = dynamo.load_current(TENANT)
    assert loaded is not None
    assert loaded.to_doc() == original.to_doc()
    assert loaded.created_at == original.created_at
    assert loaded.resolve("crm:ünïcode_tool") is not None
    head = pointer(dynamo)
    assert head["version"]["S"] == original.version
    assert int(head["chunks"]["N"]) == 1
    assert "expires_at" not in head
    assert expiry_of(dynamo, original.version) == [None, None]
    head_manifest = manifest(dynamo, original.version)
    assert head_manifest is not None
    assert head_manifest["state"]["S"] == "current"
    assert {k: head_manifest[k] for k in ("chunks", "bytes", "sha256")} == {
        k: head[k] for k in ("chunks", "bytes", "sha256")
    }


@pytest.mark.corpus
def test_round_trip_of_the_527_tool_snapshot(dynamo: DynamoStore) -> None:
    snapshot = load_catalog(corpus_path("mcpproxy", "livemcptool_snapshot", "tools.json"))
    original = catalog(snapshot)
    dynamo.publish(original, expected_current=None)
    loaded = dynamo.load_current(TENANT)
    assert loaded is not None
    assert len(loaded.tools) == len(snapshot)
    assert loaded.to_doc() == original.to_doc()


def test_a_300kb_schema_spans_several_chunks_and_reads_back_identically(dynamo: DynamoStore) -> None:
    rng = random.Random(7)
    props = {f"field_{i}": {"type": "string", "description": noise(rng, 600)} for i in range(500)}
    schema = {"type": "object", "properties": props, "required": ["field_0"]}
    big = Tool(
        server="huge", name="everything", description="A tool with a huge schema.", input_schema=schema
    )
    original = catalog([big, *tools(3)])
    dynamo.publish(original, expected_current=None)
    assert int(pointer(dynamo)["chunks"]["N"]) > 1
    assert len(chunk_items(dynamo, original.version)) == int(pointer(dynamo)["chunks"]["N"])
    loaded = dynamo.load_current(TENANT)
    assert loaded is not None
    assert loaded.by_key["huge:everything"].tool.input_schema == schema
    assert loaded.to_doc() == original.to_doc()


def test_a_catalog_of_many_small_chunks(dynamo_table: str) -> None:
    store = DynamoStore(dynamo_table, chunk_bytes=1024)
    original = catalog(tools(100, text=500))
    store.publish(original, expected_current=None)
    chunks = int(pointer(store)["chunks"]["N"])
    assert chunks > 25  # more than one BatchWriteItem and a Query that is one page per chunk range
    assert chunks == -(-len(encode_catalog(original)) // 1024)
    loaded = store.load_current(TENANT)
    assert loaded is not None
    assert loaded.to_doc() == original.to_doc()


def test_the_flip_is_two_small_actions_whatever_the_chunk_count(dynamo_table: str) -> None:
    store = DynamoStore(dynamo_table, chunk_bytes=1_000)
    sent = transactions(store)
    small = catalog(tools(2, seed=1))
    store.publish(small, expected_current=None)
    big = catalog(tools(125, text=300, seed=2))  # 41 chunks: at 350 KB each, a 14 MB transaction
    store.publish(big, expected_current=small.version)
    chunks = int(pointer(store)["chunks"]["N"])
    assert chunks > 11  # more full-size chunks than the former flip could fit in 4 MB
    assert len(chunk_items(store, big.version)) == chunks

    assert [len(actions) for actions in sent] == [2, 2]
    for actions in sent:
        put, update = actions[0]["Put"], actions[1]["Update"]
        assert put["Item"]["sk"] == {"S": "CURRENT"}
        assert update["Key"]["sk"]["S"].startswith("MANIFEST#")
        assert update["UpdateExpression"] == "SET #s = :current"
        assert len(json.dumps(actions)) < 2_000  # no chunk data anywhere near the transaction
    assert sent[1][1]["Update"]["Key"]["sk"]["S"] == f"MANIFEST#{big.version}"

    loaded = store.load_current(TENANT)
    assert loaded is not None
    assert loaded.to_doc() == big.to_doc()
    assert expiry_of(store, big.version) == [None] * (chunks + 1)
    assert None not in expiry_of(store, small.version)  # superseded: manifest and chunk marked


def test_republishing_the_current_version_is_a_no_op(dynamo: DynamoStore) -> None:
    v1 = catalog(tools(3))
    dynamo.publish(v1, expected_current=None)
    dynamo.publish(v1, expected_current=None)  # a retry after an ambiguous failure
    assert expiry_of(dynamo, v1.version) == [None, None]
    head = manifest(dynamo, v1.version)
    assert head is not None
    assert head["state"]["S"] == "current"  # not rewritten back to pending
    assert dynamo.load_current(TENANT) is not None


def test_a_stale_publish_fails_before_writing_anything(dynamo: DynamoStore) -> None:
    v1, v2 = catalog(tools(2, seed=1)), catalog(tools(2, seed=2))
    dynamo.publish(v1, expected_current=None)
    with pytest.raises(ConflictError, match=v1.version):
        dynamo.publish(v2, expected_current="v-someone-elses")
    assert chunk_items(dynamo, v2.version) == []
    assert manifest(dynamo, v2.version) is None


def test_two_racing_indexers_exactly_one_wins(dynamo_table: str) -> None:
    base = DynamoStore(dynamo_table)
    v0 = catalog(tools(2, seed=0))
    base.publish(v0, expected_current=None)
    # Two indexers are two processes: each has a client of its own (the stores' shared one is per process).
    racers = [DynamoStore(dynamo_table, chunk_bytes=2048, client=boto3.client("dynamodb")) for _ in range(2)]
    versions = [catalog(tools(20, text=300, seed=s)) for s in (1, 2)]
    arrived = threading.Barrier(2, timeout=20)
    # moto applies a transaction as several unlocked steps (real DynamoDB isolates them): both
    # racers reach the flip together, then moto is handed one transaction at a time.
    one_at_a_time = threading.Lock()

    def arrive(**_: Any) -> None:
        arrived.wait()
        one_at_a_time.acquire()

    def leave(**_: Any) -> None:
        one_at_a_time.release()

    for racer in racers:
        racer.client.meta.events.register("before-call.dynamodb.TransactWriteItems", arrive)
        racer.client.meta.events.register("after-call.dynamodb.TransactWriteItems", leave)

    def run(i: int) -> Exception | None:
        try:
            racers[i].publish(versions[i], expected_current=v0.version)
        except Exception as exc:
            return exc
        return None

    with ThreadPoolExecutor(2) as pool:
        outcomes = list(pool.map(run, range(2)))
    winners = [i for i, o in enumerate(outcomes) if o is None]
    losers = [i for i, o in enumerate(outcomes) if isinstance(o, ConflictError)]
    assert len(winners) == 1, outcomes
    assert len(losers) == 1, outcomes
    winner, loser = versions[winners[0]], versions[losers[0]]
    assert winner.version in str(outcomes[losers[0]])  # the conflict names who won

    assert base.current_version(TENANT) == winner.version
    loaded = base.load_current(TENANT)
    assert loaded is not None
    assert loaded.to_doc() == winner.to_doc()
    assert len(chunk_items(base, loser.version)) > 1
    assert None not in expiry_of(base, loser.version)  # the loser marked its own version at once
    loser_manifest = manifest(base, loser.version)
    assert loser_manifest is not None
    assert loser_manifest["state"]["S"] == "pending"
    assert set(expiry_of(base, winner.version)) == {None}
    assert None not in expiry_of(base, v0.version)  # superseded: grace


def test_throttled_mid_version_keeps_the_previous_version_current(dynamo_table: str) -> None:
    store = DynamoStore(dynamo_table, chunk_bytes=1024)
    v0 = catalog(tools(2, seed=0))
    store.publish(v0, expected_current=None)
    v1 = catalog(tools(100, text=500, seed=1))
    assert len(encode_catalog(v1)) > 25 * 1024  # at least two batches
    calls: list[int] = []

    def throttle_after_first_batch(**_: Any) -> None:
        calls.append(1)
        if len(calls) > 1:
            error = {"Code": "ProvisionedThroughputExceededException", "Message": "Rate of requests exceeded"}
            raise ClientError({"Error": error}, "BatchWriteItem")

    store.client.meta.events.register("before-call.dynamodb.BatchWriteItem", throttle_after_first_batch)
    started = time.time()
    with pytest.raises(StoreError, match="ProvisionedThroughputExceeded") as info:
        store.publish(v1, expected_current=v0.version)
    assert not isinstance(info.value, ConflictError)

    assert store.current_version(TENANT) == v0.version
    loaded = store.load_current(TENANT)
    assert loaded is not None
    assert loaded.to_doc() == v0.to_doc()
    written = chunk_items(store, v1.version)
    assert len(written) == 25  # the first batch landed, without TTL...
    assert all("expires_at" not in it for it in written)
    orphan = manifest(store, v1.version)  # ...behind a "writing" manifest that a later sweep finds
    assert orphan is not None
    assert orphan["state"]["S"] == "writing"
    assert started - 1 <= int(orphan["created_at"]["N"]) <= time.time()
    assert store.load_version(TENANT, v1.version) is None  # incomplete: never a catalog

    # Once older than pending_seconds, the next successful publish's sweep marks what was written and
    # does not recreate the chunks that never were.
    store.client.meta.events.unregister("before-call.dynamodb.BatchWriteItem", throttle_after_first_batch)
    set_attr(store, orphan, "created_at", {"N": str(int(started) - store.pending_seconds - 60)})
    v2 = catalog(tools(2, seed=2))
    store.publish(v2, expected_current=v0.version)
    assert len(chunk_items(store, v1.version)) == 25
    assert None not in expiry_of(store, v1.version)


def _unprocessed(store: DynamoStore, times: int | None) -> list[int]:
    """Make BatchWriteItem answer "all unprocessed" without writing, ``times`` times (None: forever)."""
    seen: dict[str, Any] = {}
    calls: list[int] = []

    def capture(params: dict[str, Any], **_: Any) -> None:
        seen["items"] = params["RequestItems"]

    def answer(**_: Any) -> tuple[AWSResponse, dict[str, Any]] | None:
        calls.append(1)
        if times is not None and len(calls) > times:
            return None
        return AWSResponse("http://moto.invalid", 200, {}, None), {"UnprocessedItems": seen["items"]}

    store.client.meta.events.register("before-parameter-build.dynamodb.BatchWriteItem", capture)
    store.client.meta.events.register("before-call.dynamodb.BatchWriteItem", answer)
    return calls


def test_unprocessed_items_forever_fail_after_a_bounded_retry(dynamo: DynamoStore) -> None:
    v0 = catalog(tools(2, seed=0))
    dynamo.publish(v0, expected_current=None)
    calls = _unprocessed(dynamo, None)
    with pytest.raises(StoreError, match="unprocessed"):
        dynamo.publish(catalog(tools(3, seed=1)), expected_current=v0.version)
    assert len(calls) == dynamo.batch_attempts
    assert dynamo.current_version(TENANT) == v0.version


def test_unprocessed_items_once_are_retried(dynamo: DynamoStore) -> None:
    calls = _unprocessed(dynamo, 1)
    v1 = catalog(tools(3))
    dynamo.publish(v1, expected_current=None)
    assert len(calls) == 2
    loaded = dynamo.load_current(TENANT)
    assert loaded is not None
    assert loaded.to_doc() == v1.to_doc()


def test_a_manifest_marked_for_expiry_before_the_flip_aborts_it(dynamo_table: str) -> None:
    store = DynamoStore(dynamo_table, chunk_bytes=1024)
    v0 = catalog(tools(2, seed=0))
    store.publish(v0, expected_current=None)
    v1 = catalog(tools(10, text=300, seed=1))
    other = boto3.client("dynamodb")

    def mark_manifest(**_: Any) -> None:  # as a sweep would, for a writer slower than pending_seconds
        key = {"pk": {"S": f"TENANT#{TENANT}"}, "sk": {"S": f"MANIFEST#{v1.version}"}}
        other.update_item(
            TableName=dynamo_table,
            Key=key,
            UpdateExpression="SET expires_at = :t",
            ExpressionAttributeValues={":t": {"N": str(int(time.time()) + 600)}},
        )

    store.client.meta.events.register("before-call.dynamodb.TransactWriteItems", mark_manifest)
    with pytest.raises(StoreError, match="marked for expiry") as info:
        store.publish(v1, expected_current=v0.version)
    assert not isinstance(info.value, ConflictError)
    assert store.current_version(TENANT) == v0.version
    head = manifest(store, v1.version)
    assert head is not None
    assert head["state"]["S"] == "pending"  # the flip left nothing behind


def test_a_missing_or_expired_manifest_or_chunk_hides_the_version(dynamo_table: str) -> None:
    store = DynamoStore(dynamo_table, chunk_bytes=1024)
    v1 = catalog(tools(10, text=300, seed=1))
    store.publish(v1, expected_current=None)
    assert store.load_version(TENANT, v1.version) is not None
    items = chunk_items(store, v1.version)
    assert len(items) > 2
    store.client.delete_item(TableName=store.table_name, Key={"pk": items[1]["pk"], "sk": items[1]["sk"]})
    assert store.load_version(TENANT, v1.version) is None  # a chunk missing

    v2 = catalog(tools(2, seed=2))
    store.publish(v2, expected_current=v1.version)
    head = manifest(store, v2.version)
    assert head is not None
    set_attr(store, head, "expires_at", {"N": str(int(time.time()) - 1)})
    assert store.load_current(TENANT) is None  # manifest expired (TTL has not deleted it yet)
    store.client.delete_item(TableName=store.table_name, Key={"pk": head["pk"], "sk": head["sk"]})
    assert store.load_current(TENANT) is None  # manifest gone


def test_superseded_versions_get_a_grace_ttl_and_expired_items_are_ignored(dynamo_table: str) -> None:
    store = DynamoStore(dynamo_table, grace_seconds=600)
    v1, v2 = catalog(tools(2, seed=1)), catalog(tools(2, seed=2))
    store.publish(v1, expected_current=None)
    before = int(time.time())
    store.publish(v2, expected_current=v1.version)
    old = expiry_of(store, v1.version)
    assert len(old) == 2  # manifest and its one chunk
    for expires in old:
        assert expires is not None
        assert before + 600 <= expires <= time.time() + 600
    assert store.load_version(TENANT, v1.version) is not None  # within grace: still readable
    assert "expires_at" not in pointer(store)

    # DynamoDB deletes expired items lazily (up to days later): an expired item must read as absent.
    (current,) = chunk_items(store, v2.version)
    set_attr(store, current, "expires_at", {"N": str(int(time.time()) - 1)})
    assert store.load_version(TENANT, v2.version) is None
    assert store.load_current(TENANT) is None


def plant(store: DynamoStore, version: str, state: str, age: int, *, chunks: int, written: int) -> None:
    """A version another indexer left behind: its manifest (``age`` seconds old) and ``written`` chunks."""
    pk = {"S": f"TENANT#{TENANT}"}
    store.client.put_item(
        TableName=store.table_name,
        Item={
            "pk": pk,
            "sk": {"S": f"MANIFEST#{version}"},
            "state": {"S": state},
            "chunks": {"N": str(chunks)},
            "bytes": {"N": "1"},
            "sha256": {"S": "0" * 64},
            "created_at": {"N": str(int(time.time()) - age)},
        },
    )
    for i in range(written):
        item = {"pk": pk, "sk": {"S": f"VERSION#{version}#{i:04d}"}, "data": {"B": b"x"}}
        store.client.put_item(TableName=store.table_name, Item=item)


def test_the_sweep_expires_superseded_versions_and_old_orphans_only(dynamo: DynamoStore) -> None:
    v1 = catalog(tools(2, seed=1))
    dynamo.publish(v1, expected_current=None)
    day = dynamo.pending_seconds
    plant(dynamo, "v-old-pending", "pending", day + 60, chunks=2, written=2)  # crashed before its flip
    plant(dynamo, "v-old-writing", "writing", day + 60, chunks=3, written=1)  # died among its chunks
    plant(dynamo, "v-fresh-pending", "pending", 5, chunks=2, written=2)  # an indexer in flight: untouched
    plant(dynamo, "v-fresh-writing", "writing", 5, chunks=2, written=1)
    before = int(time.time())

    v2 = catalog(tools(2, seed=2))
    dynamo.publish(v2, expected_current=v1.version)
    grace = dynamo.grace_seconds
    for version, items in ((v1.version, 2), ("v-old-pending", 3), ("v-old-writing", 2)):
        marks = expiry_of(dynamo, version)
        assert len(marks) == items  # chunks that never existed are not recreated as stubs
        assert all(m is not None and before + grace <= m <= time.time() + grace for m in marks), version
    assert set(expiry_of(dynamo, "v-fresh-pending")) == {None}
    assert set(expiry_of(dynamo, "v-fresh-writing")) == {None}
    assert set(expiry_of(dynamo, v2.version)) == {None}

    # A later sweep leaves versions already marked alone (their TTL is not pushed back).
    first = expiry_of(dynamo, v1.version)
    v3 = catalog(tools(2, seed=3))
    time.sleep(1.1)
    dynamo.publish(v3, expected_current=v2.version)
    assert expiry_of(dynamo, v1.version) == first
    assert None not in expiry_of(dynamo, v2.version)


def test_a_sweep_behind_a_newer_flip_leaves_the_serving_version_alone(dynamo_table: str) -> None:
    first, second = DynamoStore(dynamo_table), DynamoStore(dynamo_table)
    v0, v1, v2 = (catalog(tools(2, seed=s)) for s in (0, 1, 2))
    first.publish(v0, expected_current=None)

    def overtaken(**_: Any) -> None:  # right after v1's flip, before its sweep, another indexer goes
        first.client.meta.events.unregister("after-call.dynamodb.TransactWriteItems", overtaken)
        second.publish(v2, expected_current=v1.version)

    first.client.meta.events.register("after-call.dynamodb.TransactWriteItems", overtaken)
    first.publish(v1, expected_current=v0.version)  # its sweep sees v2 "current" too: it is serving
    assert first.current_version(TENANT) == v2.version
    assert set(expiry_of(first, v2.version)) == {None}
    assert None not in expiry_of(first, v1.version)
    assert None not in expiry_of(first, v0.version)
    loaded = first.load_current(TENANT)
    assert loaded is not None
    assert loaded.version == v2.version


def test_corrupt_chunk_data_is_a_store_error(dynamo: DynamoStore) -> None:
    v1 = catalog(tools(3))
    dynamo.publish(v1, expected_current=None)
    (item,) = chunk_items(dynamo, v1.version)
    set_attr(dynamo, item, "data", {"B": b"\x00garbage"})
    with pytest.raises(StoreError, match="corrupt"):
        dynamo.load_current(TENANT)

    # Size and digest consistent with the garbage: the decoder still refuses it cleanly.
    import hashlib

    head = manifest(dynamo, v1.version)
    assert head is not None
    set_attr(dynamo, head, "bytes", {"N": "8"})
    set_attr(dynamo, head, "sha256", {"S": hashlib.sha256(b"\x00garbage").hexdigest()})
    with pytest.raises(StoreError, match="unreadable"):
        dynamo.load_current(TENANT)


def test_aws_failures_are_store_errors(moto_endpoint: str) -> None:
    store = DynamoStore("no-such-table")
    with pytest.raises(StoreError, match="ResourceNotFound"):
        store.current_version(TENANT)
    with pytest.raises(StoreError, match="ResourceNotFound"):
        store.load_version(TENANT, "v1")
    with pytest.raises(StoreError, match="ResourceNotFound"):
        store.tenants()


def test_bad_chunk_size_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="chunk_bytes"):
        DynamoStore("t", client=object(), chunk_bytes=400_000)


def test_wiring_opens_a_dynamo_store(dynamo_table: str) -> None:
    store = open_store(Settings(store="dynamodb", table_name=dynamo_table))
    assert isinstance(store, DynamoStore)
    v1 = catalog(tools(1))
    store.publish(v1, expected_current=None)
    assert store.current_version(TENANT) == v1.version


def test_importing_the_store_does_not_import_boto3() -> None:
    code = "; ".join(
        [
            "import sys, foldgate.store.catalog.dynamodb",
            "sys.exit(bool({'boto3', 'botocore'} & set(sys.modules)))",
        ]
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
