"""Reading a credential from the local machine, bounded: a file read no further than its cap, and a
program run without a shell whose standard output is read no further than its cap, within a time.

One implementation for every local source (the exchange kinds' token sources,
:mod:`foldgate.upstream.oauth.sources`; workload_jwt's assertion sources,
:mod:`foldgate.upstream.oauth.assertions`). A file is read up to one byte past the cap, never sized
first and read whole (a file that grows between the two, or a device or FIFO whose size says nothing,
would be buffered whole). A program runs in its own session; on a timeout or an overflow its whole
process group is killed, so a child that inherited the output pipe cannot keep the read (or itself)
alive. Errors say what failed, never what was read: the caller prefixes the source's name.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path

from foldgate.errors import UpstreamError

__all__ = ["LocalSourceError", "read_file_capped", "run_capped"]


class LocalSourceError(UpstreamError):
    """A local source failed; the message says why (``could not start (...)``, ``did not finish
    within N s``, ``printed more than N bytes``, ``failed (exit status N)``), without what it held."""


def read_file_capped(path: str, cap: int) -> tuple[bytes, os.stat_result]:
    """At most ``cap`` bytes of ``path`` and the status of the file read (for a caller's cache);
    LocalSourceError when it holds more; OSError as it comes (the caller names the file)."""
    with Path(path).open("rb") as handle:
        status = os.fstat(handle.fileno())
        data = handle.read(cap + 1)
    if len(data) > cap:
        raise LocalSourceError(f"holds more than {cap} bytes")
    return data, status


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> bytes:
    """Standard output up to one byte past the cap (more is refused without being buffered)."""
    out = bytearray()
    while len(out) <= cap:
        chunk = await stream.read(cap + 1 - len(out))
        if not chunk:
            break
        out.extend(chunk)
    return bytes(out)


def _end_group(proc: asyncio.subprocess.Process) -> None:
    # The command runs in its own session: its children (which may hold the pipe open) end with it.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_capped(argv: list[str], *, cap: int, timeout_s: float) -> bytes:
    """The standard output of ``argv`` (no shell, no input, standard error discarded), at most ``cap``
    bytes, the program done within ``timeout_s``; LocalSourceError otherwise (its group killed)."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            start_new_session=True,
        )
    except OSError as exc:
        raise LocalSourceError(f"could not start ({exc.strerror or type(exc).__name__})") from None
    assert proc.stdout is not None  # asked for above
    stdout = proc.stdout

    async def complete() -> bytes:
        out = await _read_capped(stdout, cap)
        if len(out) <= cap:
            await proc.wait()
        return out

    try:
        out = await asyncio.wait_for(complete(), timeout_s)
    except TimeoutError:
        _end_group(proc)
        await proc.wait()
        raise LocalSourceError(f"did not finish within {timeout_s:g} s") from None
    except BaseException:  # cancelled: the program must not outlive the request that ran it
        _end_group(proc)
        raise
    if len(out) > cap:
        _end_group(proc)
        await proc.wait()
        raise LocalSourceError(f"printed more than {cap} bytes")
    if proc.returncode != 0:
        raise LocalSourceError(f"failed (exit status {proc.returncode})")
    return out
