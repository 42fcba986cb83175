"""``foldgate bench scale-indexing``: fan-out indexing on loopback (issue 30, item 1).

One moto_server (SQS, DynamoDB, SSM), the table created from template.yaml, ``--tenants`` tenants in
Parameter Store, each a few servers of a recorded catalog (``../shared/corpora``) served by a few replay
processes shared by every tenant. Measured with the real handlers:

* enqueue: IndexScheduleFunction's handler on the real schedule event (list the tenants, then
  SendMessageBatch 10 per call), with the listing and the sending timed apart;
* consume: IndexerFunction's handler on SQS batches of ``--batch`` messages received from the queue,
  for ``--sample`` tenants: wall and CPU time per invocation, tenants per invocation per second;
* the projected wall time to reindex 10,000 tenants at ``--concurrency`` instances (the event source
  mapping's maximum concurrency), with the arithmetic: this machine's wall time per invocation with its
  CPU part stretched to a 1,024 MB Lambda's share of a vCPU (1,024 / 1,769).

Loopback figures: moto is not AWS and the replays answer in microseconds, so real upstreams add their
own latency (overlapped ``--batch`` tenants at a time within an invocation).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from foldgate.config.settings import Settings
from foldgate.dev.bench.moto import TEMPLATE, create_table_from_template, moto_server, patched_environ
from foldgate.dev.bench.serve import safe_server_names
from foldgate.dev.corpus import load_catalog_rows
from foldgate.dev.procs import stop_process

__all__ = ["DEFAULT_CORPUS", "format_scale_indexing_report", "run_scale_indexing_bench"]

DEFAULT_CORPUS = TEMPLATE.parent.parent / "shared" / "corpora" / "livemcpbench" / "tools.jsonl"
# A 1,024 MB function's share of a vCPU (Lambda allocates CPU in proportion to memory; 1,769 MB = 1).
LAMBDA_VCPU = 1024 / 1769
TARGET_TENANTS = 10_000
TARGET_S = 15 * 60


class _Context:
    function_name = "bench-indexer"
    aws_request_id = "bench"
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:bench-indexer"
    memory_limit_in_mb = 1024

    def __init__(self, timeout_s: float = 300.0) -> None:
        self._ends = time.monotonic() + timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._ends - time.monotonic()) * 1000))


@contextlib.contextmanager
def _replays(catalog: Path, count: int) -> Iterator[list[dict[str, str]]]:
    """``count`` replay processes of the whole catalog; yields each one's server name -> URL."""
    procs: list[subprocess.Popen[str]] = []
    servers = {str(r["server"]) for r in load_catalog_rows(catalog)}
    try:
        out: list[dict[str, str]] = []
        for _ in range(count):
            cmd = [sys.executable, "-m", "foldgate.app.cli", "replay", str(catalog), "--port", "0"]
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            procs.append(proc)
            urls: dict[str, str] = {}
            assert proc.stdout is not None
            while len(urls) < len(servers):
                line = proc.stdout.readline()
                if not line:
                    raise RuntimeError(f"replay exited early with {proc.wait()}")
                name, url = line.rstrip("\n").split("\t")
                urls[name] = url
            out.append(urls)
        yield out
    finally:
        for proc in procs:
            stop_process(proc)


def _tenant_docs(n: int, replays: list[dict[str, str]], seed: int) -> dict[str, dict[str, Any]]:
    """Tenant configs: 2-8 servers of the catalog each, every tenant on one replay process."""
    rng = random.Random(seed)
    names = sorted(replays[0])
    safe = safe_server_names(names)
    docs = {}
    for i in range(n):
        urls = replays[i % len(replays)]
        picked = rng.sample(names, k=min(len(names), rng.randint(2, 8)))
        docs[f"t{i:05d}"] = {"servers": [{"name": safe[s], "url": urls[s]} for s in picked]}
    return docs


def _put_configs(ssm: Any, prefix: str, docs: dict[str, dict[str, Any]]) -> None:
    def put(item: tuple[str, dict[str, Any]]) -> None:
        tenant, doc = item
        ssm.put_parameter(
            Name=f"{prefix}/tenants/{tenant}/config", Value=json.dumps(doc), Type="String", Overwrite=True
        )

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(put, docs.items()))


def _sqs_event(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The event an SQS event source mapping hands the function (events/sqs-index.json's shape)."""
    return {
        "Records": [
            {
                "messageId": m["MessageId"],
                "receiptHandle": m["ReceiptHandle"],
                "body": m["Body"],
                "attributes": {
                    "ApproximateReceiveCount": m.get("Attributes", {}).get("ApproximateReceiveCount", "1")
                },
                "messageAttributes": {},
                "md5OfBody": m["MD5OfBody"],
                "eventSource": "aws:sqs",
                "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:bench-index",
                "awsRegion": "us-east-1",
            }
            for m in messages
        ]
    }


# The SchedulerFunction's and the IndexerFunction's handler for the settings
# (foldgate.app.schedule_lambda / indexer_lambda, handed in by the CLI: dev tooling sits below the app).
HandlerFactory = Callable[[Settings], Callable[[dict[str, Any], Any], dict[str, Any]]]


def run_scale_indexing_bench(
    corpus: str | Path | None = None,
    *,
    build_schedule_handler: HandlerFactory,
    build_indexer_handler: HandlerFactory,
    tenants: int = 2000,
    sample: int = 48,
    batch: int = 4,
    concurrency: int = 30,
    replays: int = 3,
    embedding: str = "local",
    upstream_wait_s: float = 2.0,
    sqs_call_ms: float = 25.0,
) -> dict[str, Any]:
    """Run the bench; returns the figures (see the module doc). Raises FileNotFoundError without the
    corpus."""
    catalog = Path(corpus) if corpus is not None else DEFAULT_CORPUS
    if not catalog.exists():
        raise FileNotFoundError(f"{catalog} is absent: the team kit ../shared is not beside this checkout")
    # The handlers and AWS clients load only when this bench runs.
    import boto3

    from foldgate.config.ssm import SsmConfigSource
    from foldgate.index.fanout import TenantMessage
    from foldgate.index.sqs_queue import SqsIndexQueue

    event = {
        "version": "0", "id": str(uuid.uuid4()), "detail-type": "Scheduled Event", "source": "aws.events",
        "account": "123456789012", "time": "2026-11-29T21:00:00Z", "region": "us-east-1",
        "resources": [], "detail": {},
    }  # fmt: skip
    window = "2026-11-29T21:00:00Z"
    event["time"] = window
    report: dict[str, Any] = {"tenants": tenants, "batch": batch, "concurrency": concurrency}
    # The handlers' metrics and traces would print to stdout among the figures.
    quiet: dict[str, str | None] = {
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_TRACE_DISABLED": "true",
    }
    with patched_environ(quiet), moto_server(), _replays(catalog, replays) as urls:
        table, prefix = f"bench-{uuid.uuid4().hex[:8]}", f"/bench-{uuid.uuid4().hex[:6]}"
        create_table_from_template(boto3.client("dynamodb"), table)
        sqs, ssm = boto3.client("sqs"), boto3.client("ssm")
        queue_url = sqs.create_queue(QueueName=f"index-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        docs = _tenant_docs(tenants, urls, seed=7)
        _put_configs(ssm, prefix, docs)
        settings = Settings(
            store="dynamodb", table_name=table, config_source="ssm", config_prefix=prefix,
            index_queue_url=queue_url, embedding_provider=embedding,  # type: ignore[arg-type]
            index_batch_concurrency=batch, log_level="ERROR",
        )  # fmt: skip

        # Enqueue: the schedule function end to end, and its listing apart (the rest is sending).
        schedule = build_schedule_handler(settings)
        t = time.perf_counter()
        doc = schedule(event, _Context())
        report["enqueue_s"] = round(time.perf_counter() - t, 3)
        assert doc.get("enqueued") == tenants, doc
        t = time.perf_counter()
        assert len(SsmConfigSource(prefix).tenants()) == tenants
        report["list_s"] = round(time.perf_counter() - t, 3)
        report["send_s"] = round(max(0.0, report["enqueue_s"] - report["list_s"]), 3)
        report["send_calls"] = math.ceil(tenants / 10)
        # One SendMessageBatch on the empty queue next door (moto's cost grows with the queue's depth).
        probe = sqs.create_queue(QueueName=f"probe-{uuid.uuid4().hex[:8]}")["QueueUrl"]
        t = time.perf_counter()
        SqsIndexQueue(probe, workers=1).send([TenantMessage(f"p{i}", "schedule", window) for i in range(100)])
        report["moto_send_call_ms"] = round((time.perf_counter() - t) * 100, 1)

        # Consume: the IndexerFunction on SQS batches, as the event source mapping hands them over.
        indexer = build_indexer_handler(settings)
        walls: list[float] = []
        cpus: list[float] = []
        tools = 0
        failures = 0
        done = 0
        cold_s = None
        while done < sample + batch:  # the first batch is the cold start, reported apart
            got = sqs.receive_message(
                QueueUrl=queue_url, MaxNumberOfMessages=batch, AttributeNames=["All"], VisibilityTimeout=600
            ).get("Messages", [])
            if not got:
                break
            c, w = time.process_time(), time.perf_counter()
            answer = indexer(_sqs_event(got), _Context())
            wall, cpu = time.perf_counter() - w, time.process_time() - c
            failures += len(answer["batchItemFailures"])
            if cold_s is None:
                cold_s = wall
            else:
                walls.append(wall)
                cpus.append(cpu)
                tools += sum(len(docs[json.loads(m["Body"])["tenant"]]["servers"]) for m in got)
            done += len(got)
        report.update(
            _figures(
                walls, cpus, batch=batch, concurrency=concurrency, enqueue_s=report["enqueue_s"],
                tenants=tenants, upstream_wait_s=upstream_wait_s, list_s=report["list_s"],
                sqs_call_ms=sqs_call_ms,
            )
        )  # fmt: skip
        report["load_average"] = round(os.getloadavg()[0], 1)
        report["cpus"] = os.cpu_count()
        report["cold_invocation_s"] = round(cold_s or 0.0, 3)
        report["batch_item_failures"] = failures
        report["servers_per_tenant"] = round(tools / max(1, len(walls) * batch), 1)
        report["embedding"] = embedding
    return report


def _projection(per_invocation_s: float, batch: int, concurrency: int, enqueue_10k: float) -> dict[str, Any]:
    """Wall time for 10,000 tenants: waves of ``concurrency`` invocations of ``batch`` tenants."""
    invocations = math.ceil(TARGET_TENANTS / batch)
    waves = math.ceil(invocations / concurrency)
    wall = enqueue_10k + waves * per_invocation_s
    return {
        "invocation_s": round(per_invocation_s, 3),
        "invocations": invocations,
        "waves": waves,
        "wall_s": round(wall, 1),
        "within_15_min": wall <= TARGET_S,
        "concurrency_for_15_min": math.ceil(
            invocations * per_invocation_s / max(1.0, TARGET_S - enqueue_10k)
        ),
    }


def _figures(
    walls: list[float],
    cpus: list[float],
    *,
    batch: int,
    concurrency: int,
    enqueue_s: float,
    tenants: int,
    upstream_wait_s: float,
    list_s: float,
    sqs_call_ms: float,
) -> dict[str, Any]:
    if not walls:
        return {}
    wall, cpu = statistics.mean(walls), statistics.mean(cpus)
    enqueue_10k = enqueue_s * TARGET_TENANTS / tenants
    # On SQS a SendMessageBatch takes tens of milliseconds whatever the depth (moto's grows with it):
    # the listing as measured, scaled, plus 1,000 calls 4 at a time.
    enqueue_aws = list_s * TARGET_TENANTS / tenants + math.ceil(TARGET_TENANTS / 10) * sqs_call_ms / 1000 / 4
    # On a Lambda the indexer's own CPU runs at the function's share of a vCPU, and the batch's tenants
    # wait on their upstreams at once (one tenant's round trips in a row, its servers in parallel).
    model_s = cpu / LAMBDA_VCPU + upstream_wait_s
    return {
        "invocations_measured": len(walls),
        "invocation_wall_s": round(wall, 3),
        "invocation_cpu_s": round(cpu, 3),
        "invocation_p95_s": round(sorted(walls)[max(0, math.ceil(0.95 * len(walls)) - 1)], 3),
        "tenants_per_invocation_per_s": round(batch / wall, 2),
        "cpu_s_per_tenant": round(cpu / batch, 3),
        "upstream_wait_s": upstream_wait_s,
        "enqueue_10k_s": round(enqueue_10k, 1),
        "enqueue_10k_aws_s": round(enqueue_aws, 1),
        "sqs_call_ms": sqs_call_ms,
        # This machine's wall time as it is (other processes included: moto, the replays, the load).
        "projection_measured": _projection(wall, batch, concurrency, enqueue_10k),
        "projection_lambda": _projection(model_s, batch, concurrency, enqueue_aws),
    }


def format_scale_indexing_report(r: dict[str, Any]) -> str:
    """The figures as text, the projections' arithmetic spelled out."""
    lines = [
        f"fan-out indexing on loopback (moto SQS/DynamoDB/SSM, replay upstreams, embedding={r['embedding']}; "
        f"load average {r.get('load_average')} on {r.get('cpus')} CPUs)",
        f"enqueue {r['tenants']} tenants: {r['enqueue_s']:.2f} s end to end "
        f"(list {r['list_s']:.2f} s, send {r['send_s']:.2f} s in {r['send_calls']} SendMessageBatch calls; "
        f"moto takes {r['moto_send_call_ms']:.0f} ms a call on an empty queue, more as it fills)",
    ]
    if "projection_measured" not in r:
        lines.append("no warm invocation measured (raise --sample)")
        return "\n".join(lines)
    lines.append(
        f"consume: {r['invocations_measured']} warm invocations of {r['batch']} tenants "
        f"(~{r['servers_per_tenant']} servers each; the cold first one {r['cold_invocation_s']:.2f} s): "
        f"wall {r['invocation_wall_s']:.2f} s (p95 {r['invocation_p95_s']:.2f} s), "
        f"indexer CPU {r['invocation_cpu_s']:.2f} s ({r['cpu_s_per_tenant']:.2f} s a tenant), "
        f"{r['tenants_per_invocation_per_s']:.2f} tenants/s per invocation; "
        f"{r['batch_item_failures']} batch item failures"
    )
    for label, key, how, enqueue in (
        (
            "as measured here",
            "projection_measured",
            f"{r['invocation_wall_s']:.2f} s wall",
            r["enqueue_10k_s"],
        ),
        (
            "on 1,024 MB Lambdas",
            "projection_lambda",
            f"{r['invocation_cpu_s']:.2f} s CPU / {LAMBDA_VCPU:.3f} vCPU"
            f" + {r['upstream_wait_s']:.1f} s upstream wait",
            r["enqueue_10k_aws_s"],
        ),
    ):
        p = r[key]
        lines.append(
            f"10,000 tenants {label}: per invocation {how} = {p['invocation_s']:.2f} s; "
            f"ceil(10,000 / {r['batch']}) = {p['invocations']} invocations, {r['concurrency']} at once = "
            f"{p['waves']} waves x {p['invocation_s']:.2f} s + enqueue {enqueue:.1f} s = "
            f"{p['wall_s']:.0f} s ({p['wall_s'] / 60:.1f} min, 15 min "
            f"{'met' if p['within_15_min'] else 'missed'}); 15 min needs ceil({p['invocations']} x "
            f"{p['invocation_s']:.2f} / (900 - {enqueue:.1f}))"
            f" = {p['concurrency_for_15_min']} at once"
        )
    lines.append(
        f"enqueue of 10,000 on SQS: list {r['list_s']:.2f} s x {10_000 / r['tenants']:g} + 1,000 calls x "
        f"{r['sqs_call_ms']:.0f} ms / 4 workers = {r['enqueue_10k_aws_s']:.1f} s"
    )
    return "\n".join(lines)
