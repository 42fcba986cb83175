"""Child processes for benchmarks and tests: a free loopback port, and a stop that never hangs."""

from __future__ import annotations

import socket
import subprocess
from typing import Any

__all__ = ["free_port", "stop_process"]


def free_port() -> int:
    """A port that was free a moment ago on loopback."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop_process(proc: subprocess.Popen[Any]) -> None:
    """Terminate a process we started, killing it if it does not exit promptly."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
