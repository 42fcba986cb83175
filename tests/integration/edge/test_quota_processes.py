"""A tenant's request quota holds across gateway processes: two real ``foldgate serve`` processes
sharing one SQLite file (each with its own in-memory leases, as two Lambda instances have), hammered
at once, admit together no more than the quota allows over the run (the bound of
foldgate.store.quotas.base: (seconds + 3 + 2 + 1) / 60 x the quota, plus one); every other answer is the
429 the per-instance limiter gives. Each process alone would admit its own bucket and refill."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path

from foldgate.store.quotas.base import BURST_SECONDS, CATCH_UP_S, SLICE_LIFETIME_S, Bucket
from tests.procs import foldgate_serve

PER_MINUTE = 600  # ten a second, a bucket of thirty
RUN_S = 3.0
PING = b'{"jsonrpc":"2.0","id":1,"method":"ping"}'
HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


def _post(url: str) -> tuple[int, str | None]:
    """The status and Retry-After of one ping."""
    request = urllib.request.Request(url, data=PING, headers=HEADERS, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=10) as r:
            return int(r.status), None
    except urllib.error.HTTPError as exc:
        return int(exc.code), exc.headers.get("retry-after")


def test_a_tenant_quota_holds_across_two_gateway_processes(tmp_path: Path) -> None:
    config = {"servers": [], "limits": {"requests_per_minute": PER_MINUTE}}
    # One store for both; the per-instance limit off so that only the quota refuses.
    env = {"FOLDGATE_SQLITE_PATH": str(tmp_path / "shared.sqlite3"), "FOLDGATE_RATE_LIMIT_PER_MINUTE": "0"}
    with (
        foldgate_serve(config, tmp_path / "a", env=env) as first,
        foldgate_serve(config, tmp_path / "b", env=env) as second,
    ):
        answers: Counter[tuple[str, int]] = Counter()
        lock = threading.Lock()
        start = threading.Event()
        stop_at: list[float] = []

        def hammer(base: str) -> None:
            start.wait()
            while time.monotonic() < stop_at[0]:
                status, retry_after = _post(f"{base}/mcp/all")
                with lock:
                    answers[(base, status)] += 1
                    if status == 429 and not (retry_after or "").isdigit():
                        answers[(base, -1)] += 1  # a refusal without its Retry-After

        threads = [threading.Thread(target=hammer, args=(base,)) for base in (first, second) * 2]
        for thread in threads:
            thread.start()
        began = time.monotonic()
        stop_at.append(began + RUN_S)
        start.set()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - began

    statuses = Counter(status for (_, status), n in answers.items() for _ in range(n))
    assert set(statuses) <= {200, 429}, statuses  # and every 429 said when to retry (no -1)
    admitted = statuses[200]
    bound = PER_MINUTE * (elapsed + BURST_SECONDS + SLICE_LIFETIME_S + CATCH_UP_S) / 60 + 1
    assert admitted <= bound, (admitted, bound, answers)
    # Both gateways were refused some (they shared one budget) and the budget was spent, not withheld:
    # at least a full bucket was admitted.
    assert answers[(first, 429)] > 0, answers
    assert answers[(second, 429)] > 0, answers
    assert admitted >= Bucket(PER_MINUTE).capacity, answers
