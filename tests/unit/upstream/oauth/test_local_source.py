"""The one bounded reader of local sources (files, commands) both token-source kinds use: a file's
bytes up to its cap with the status of what was read; a command's output, and a cancelled read (the
request that ran it went away) ends the program's whole group, as a timeout does."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from foldgate.upstream.oauth.local_source import LocalSourceError, read_file_capped, run_capped


def test_a_file_is_read_up_to_its_cap_with_the_status_of_what_was_read(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_bytes(b"abc")
    data, status = read_file_capped(str(path), 3)
    assert (data, status.st_size) == (b"abc", 3)
    with pytest.raises(LocalSourceError, match="holds more than 2 bytes"):
        read_file_capped(str(path), 2)


async def test_a_command_prints_and_fails_with_its_status() -> None:
    assert await run_capped([sys.executable, "-c", "print('tok')"], cap=10, timeout_s=10) == b"tok\n"
    with pytest.raises(LocalSourceError, match=r"failed \(exit status 4\)"):
        await run_capped([sys.executable, "-c", "raise SystemExit(4)"], cap=10, timeout_s=10)


async def test_a_cancelled_read_ends_the_programs_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = f"import os, time\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\ntime.sleep(60)"
    task = asyncio.create_task(run_capped([sys.executable, "-c", script], cap=10, timeout_s=60))
    for _ in range(100):
        if pid_file.exists() and pid_file.read_text():
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stat = Path(f"/proc/{pid_file.read_text()}/stat")
    for _ in range(50):  # the kill is asynchronous; an unreaped program is a zombie ("Z"): gone too
        if not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the cancelled command outlived its request")
