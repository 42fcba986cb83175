"""``bench call``'s concurrency figures: rounds folded into one side's figure, the processes watched by
URL, and each process's CPU time read from the system."""

from __future__ import annotations

import os
import subprocess
import sys

from foldgate.dev.bench import call, call_procs
from foldgate.dev.bench.call import format_cpu


def test_rounds_fold_into_means_with_errors_summed() -> None:
    rows = [
        {"calls_per_s": 100.0, "errors": 1, "cpu_ms_per_call": {"gateway": 1.0, "client": 2.0}},
        {"calls_per_s": 200.0, "errors": 2, "cpu_ms_per_call": {"gateway": 2.0, "client": 3.0}},
    ]
    assert call._rounds(rows) == {
        "calls_per_s": 150.0,
        "errors": 3,
        "cpu_ms_per_call": {"gateway": 1.5, "client": 2.5},
    }
    # A process whose CPU could not be read in one round is unknown, not averaged over the others.
    rows[0]["cpu_ms_per_call"] = {"gateway": None, "client": 2.0}
    assert call._rounds(rows)["cpu_ms_per_call"] == {"gateway": None, "client": 2.5}
    assert "cpu_ms_per_call" not in call._rounds([{"calls_per_s": 1.0, "errors": 0}])


def test_watched_processes_are_found_by_gateway_base_or_upstream_url() -> None:
    call_procs.PIDS.update({"http://127.0.0.1:1": 11, "http://127.0.0.1:2/mcp": 22})
    try:
        watch = call._watch(
            {
                "gateway": "http://127.0.0.1:1/mcp/all",
                "upstream": "http://127.0.0.1:2/mcp",
                "gone": "http://x/mcp",
            }
        )
    finally:
        call_procs.PIDS.pop("http://127.0.0.1:1")
        call_procs.PIDS.pop("http://127.0.0.1:2/mcp")
    assert watch == {"gateway": 11, "upstream": 22}


def test_cpu_seconds_counts_a_busy_process_and_knows_a_gone_one() -> None:
    if not os.path.exists(f"/proc/{os.getpid()}/stat"):
        assert call_procs.cpu_seconds(os.getpid()) is None
        return
    busy = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass",
        ]
    )
    os.waitid(os.P_PID, busy.pid, os.WEXITED | os.WNOWAIT)  # exited, not reaped: its figures stay
    used = call_procs.cpu_seconds(busy.pid)
    busy.wait()
    assert used is not None
    assert used >= 0.3
    assert call_procs.cpu_seconds(busy.pid) is None  # reaped: no such process


def test_the_cpu_line_names_each_process() -> None:
    assert format_cpu("proxied", {"gateway": 1.25, "upstream": None}) == (
        "proxied: gateway 1.25, upstream - CPU ms per call"
    )
    assert "not measured" in format_cpu("direct", None)
