"""Token sources: a secret, a file re-read each time, a command's output; bounded, single tokens only;
an inbound source without an inbound identity is the tool error; no error ever carries a token."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from foldgate.config.token_source import TokenSource
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.model.caller import UpstreamCaller
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
