"""``foldgate bench activity``: what recording costs a call, and how many store writes it takes.

- **enqueue**: the time of one ``BufferedRecorder.record`` (the only part on a call's path), per call
  (p50 / p99 from per-call timings, and the mean over the run), on a recorder whose store is real but
  whose writer drains in the background meanwhile;
- **writes per call** at a steady rate: events recorded at ``rate`` per second for ``seconds``, then
  counted store writes (BatchWriteItem calls against moto_server with the cloud's 10 s age bound, and
  SQLite transactions with the local 1 s bound) divided by the calls. Pacing uses sleeps: a benchmark,
  never a test;
- **writer CPU per event** in SQLite: the writer thread's CPU time per event stored (encoding, insert,
  commit), with the batch of 25 the cloud uses and with the local one (:data:`SQLITE_BATCH`).
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from foldgate.model.activity import ActivityEvent
from foldgate.serve.activity_recorder import SQLITE_BATCH, BufferedRecorder
from foldgate.store.activity.base import ActivityStore, StoredRecord
from foldgate.store.activity.sqlite import SqliteActivityStore

__all__ = ["format_activity_report", "run_activity_bench"]


def _event(i: int) -> ActivityEvent:
    return ActivityEvent(
        "bench", "tools/call", "mcp", "ok", server="crm", tool="find_contact", principal="tok_bench",
        gateway_ms=3.2, upstream_ms=2.1, request_bytes=180, response_bytes=900, request_id=str(i),
    )  # fmt: skip


def _enqueue(store: ActivityStore, records: int) -> dict[str, float]:
    recorder = BufferedRecorder(store, max_age_s=1.0, capacity=max(records, 25))
    timings: list[int] = []
    events = [_event(i) for i in range(records)]
    clock = time.perf_counter_ns
    for e in events:
        start = clock()
        recorder.record(e)
        timings.append(clock() - start)
    recorder.close(timeout=120)
    timings.sort()
    return {
        "records": records,
        "p50_us": timings[len(timings) // 2] / 1000,
        "p99_us": timings[int(len(timings) * 0.99)] / 1000,
        "mean_us": statistics.fmean(timings) / 1000,
        "dropped": recorder.stats().dropped,
    }


def _steady(
    store: ActivityStore, max_age_s: float, rate: float, seconds: float, count: Any
) -> dict[str, Any]:
    """Record at ``rate`` per second for ``seconds``; ``count()`` says how many writes the store made."""
    recorder = BufferedRecorder(store, max_age_s=max_age_s)
    calls = int(rate * seconds)
    start = time.monotonic()
    for i in range(calls):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        recorder.record(_event(i))
    before_close = count()
    recorder.close(timeout=60)
    stats = recorder.stats()
    return {
        "calls": calls,
        "rate_per_s": rate,
        "max_age_s": max_age_s,
        "writes_during_load": before_close,
        "writes_per_call": before_close / calls if calls else 0.0,
        "written": stats.written,
        "dropped": stats.dropped,
    }


def _write_cpu(path: Path, batch: int, events: int = 5_000) -> float:
    """Microseconds of CPU per event stored by ``put_many`` in batches of ``batch``."""
    store = SqliteActivityStore(path)
    records = [StoredRecord(_event(i).with_id(), time.time() + 86_400) for i in range(events)]
    start = time.thread_time()
    for at in range(0, events, batch):
        store.put_many(records[at : at + batch])
    spent = time.thread_time() - start
    store.close()
    return spent / events * 1e6


class _CountingSqlite(SqliteActivityStore):
    writes = 0

    def put_many(self, records: Any) -> None:
        self.writes += 1
        super().put_many(records)


def run_activity_bench(records: int = 100_000, rate: float = 50.0, seconds: float = 4.0) -> dict[str, Any]:
    """Enqueue cost and writes per call (SQLite locally; DynamoDB on a moto_server it starts)."""
    # Loaded here: only this bench needs moto and boto3.
    import boto3

    from foldgate.dev.bench.moto import create_table_from_template, moto_server
    from foldgate.store.activity.dynamodb import DynamoActivityStore

    report: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        sqlite = _CountingSqlite(Path(tmp) / "bench.sqlite3")
        report["enqueue"] = _enqueue(sqlite, records)
        sqlite.writes = 0
        report["sqlite"] = _steady(sqlite, 1.0, rate, seconds, lambda: sqlite.writes)
        sqlite.close()
        report["sqlite_write_us"] = {
            batch: _write_cpu(Path(tmp) / f"write{batch}.sqlite3", batch) for batch in (25, SQLITE_BATCH)
        }
    with moto_server():
        client = boto3.client("dynamodb")
        table = f"foldgate-bench-{uuid.uuid4().hex[:8]}"
        create_table_from_template(client, table)
        dynamo = DynamoActivityStore(table, client=client)
        writes = [0]
        client.meta.events.register(
            "before-call.dynamodb.BatchWriteItem", lambda **_: writes.__setitem__(0, writes[0] + 1)
        )
        report["dynamodb"] = _steady(dynamo, 10.0, rate, seconds, lambda: writes[0])
    return report


def format_activity_report(report: dict[str, Any]) -> str:
    """The report as lines of text."""
    e = report["enqueue"]
    lines = [
        f"record() on the call path: p50 {e['p50_us']:.2f} us, p99 {e['p99_us']:.2f} us, "
        f"mean {e['mean_us']:.2f} us over {e['records']:,} events (dropped {e['dropped']})",
    ]
    cpu = report["sqlite_write_us"]
    lines.append(
        "sqlite writer CPU per event: " + ", ".join(f"{us:.1f} us in batches of {b}" for b, us in cpu.items())
    )
    for name in ("sqlite", "dynamodb"):
        r = report[name]
        lines.append(
            f"{name}: {r['calls']} calls at {r['rate_per_s']:g}/s, age bound {r['max_age_s']:g} s: "
            f"{r['writes_during_load']} batched writes during the load = {r['writes_per_call']:.3f} per call "
            f"(written {r['written']}, dropped {r['dropped']})"
        )
    return "\n".join(lines)
