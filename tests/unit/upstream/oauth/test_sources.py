"""Token sources: a secret, a file re-read each time, a command's output; bounded, single tokens only;
an inbound source without an inbound identity is the tool error; no error ever carries a token."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

from foldgate.config.token_source import TokenSource
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.model.caller import UpstreamCaller
from foldgate.upstream.oauth import sources
from foldgate.upstream.oauth.sources import MAX_TOKEN_BYTES, read_token

CALLER = UpstreamCaller("acme", "oauth-sub-1", "inbound-canary")
LOCAL = {"allow_loopback": True}


async def secrets(name: str) -> str:
    return {"/fg/tok": "  secret-token\n"}[name]


def source(**fields: object) -> TokenSource:
    return TokenSource.model_validate(fields, context=LOCAL)


async def test_each_source_reads_its_token(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("file-token-1\n")
    assert await read_token(source(inbound=True), CALLER, secrets, server="s") == "inbound-canary"
    assert await read_token(source(secret="/fg/tok"), CALLER, secrets, server="s") == "secret-token"
    assert await read_token(source(file=str(token_file)), CALLER, secrets, server="s") == "file-token-1"
    token_file.write_text("file-token-2")  # a sidecar rotated it: read again each time
    assert await read_token(source(file=str(token_file)), CALLER, secrets, server="s") == "file-token-2"
    command = [sys.executable, "-c", "print('command-token')"]
    assert await read_token(source(command=command), CALLER, secrets, server="s") == "command-token"


async def test_no_inbound_identity_is_the_authorization_error() -> None:
    with pytest.raises(UpstreamAuthorizationError, match="inbound OAuth identity"):
        await read_token(source(inbound=True), UpstreamCaller("acme", "fgt-id"), secrets, server="s")


async def test_bad_sources_fail_without_saying_what_they_held(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_text("x" * (MAX_TOKEN_BYTES + 1))
    two = tmp_path / "two"
    two.write_text("leaked-canary second-word")
    failing = [sys.executable, "-c", "print('leaked-canary'); raise SystemExit(3)"]
    cases = [
        (source(file=str(big)), "more than"),
        (source(file=str(two)), "single printable token"),
        (source(file=str(tmp_path / "absent")), "could not be read"),
        (source(command=failing), "exit status 3"),
        (source(command=[str(tmp_path / "no-such-program")]), "could not start"),
    ]
    for bad, why in cases:
        with pytest.raises(UpstreamError, match=why) as caught:
            await read_token(bad, CALLER, secrets, server="s")
        assert "leaked-canary" not in caught.value.message


async def test_a_command_printing_without_end_is_stopped_at_the_cap_not_buffered() -> None:
    # Reading stops at the cap: a command that floods its output (and never exits) is refused at
    # once, instead of buffering everything it prints until the timeout.
    flood = [
        sys.executable,
        "-c",
        "import sys, time\nsys.stdout.write('x' * 100000)\nsys.stdout.flush()\ntime.sleep(60)",
    ]
    with pytest.raises(UpstreamError, match="more than"):
        await read_token(source(command=flood), CALLER, secrets, server="s")


async def test_a_command_whose_child_keeps_its_output_open_ends_with_its_whole_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A program that leaves a child behind holding standard output: the timeout ends the whole group.
    monkeypatch.setattr(sources, "COMMAND_TIMEOUT_S", 1.0)
    pid_file = tmp_path / "child"
    script = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "sys.stdout.write('tok')\n"
    )
    with pytest.raises(UpstreamError, match="did not finish"):
        await read_token(source(command=[sys.executable, "-c", script]), CALLER, secrets, server="s")
    stat = Path(f"/proc/{pid_file.read_text()}/stat")
    for _ in range(50):  # the kill is asynchronous; an unreaped child is a zombie ("Z"): gone too
        if not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the command's child outlived it")
