"""Read a token a :class:`~foldgate.config.token_source.TokenSource` names, to hand over as it is.

``inbound`` is the calling person's verified inbound OAuth access token (bound to the caller by
:func:`foldgate.model.caller.calling_as`, never to the shared subject); ``secret`` a secret parameter;
``file`` a file re-read each time (a sidecar may rotate it); ``command`` a program run without a shell,
its standard output the token. A token is never logged and never put in an error message: errors say
which source failed and why, never what it held.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Final

from foldgate.config.token_source import TokenSource
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.model.caller import UpstreamCaller
from foldgate.upstream.oauth.registration import SecretReader

__all__ = ["COMMAND_TIMEOUT_S", "MAX_TOKEN_BYTES", "read_token"]

# A JWT with many claims is a few KB; anything much larger is not a token.
MAX_TOKEN_BYTES: Final = 16 * 1024
COMMAND_TIMEOUT_S: Final = 10.0


def _checked(value: str, where: str) -> str:
    token = value.strip()
    if not token:
        raise UpstreamError(f"the token from {where} is empty")
    if len(token) > MAX_TOKEN_BYTES or any(c.isspace() for c in token) or not token.isprintable():
        raise UpstreamError(f"the token from {where} is not a single printable token")
    return token


async def _run(command: list[str]) -> str:
    what = f"command {command[0][:200]!r}"
    try:
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
    except OSError as exc:
        raise UpstreamError(f"{what} could not start ({type(exc).__name__})") from None
    try:
        out, _ = await asyncio.wait_for(proc.communicate(), COMMAND_TIMEOUT_S)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise UpstreamError(f"{what} did not finish within {COMMAND_TIMEOUT_S:.0f} s") from None
    if proc.returncode != 0:
        raise UpstreamError(f"{what} failed (exit status {proc.returncode})")
    if len(out) > MAX_TOKEN_BYTES:
        raise UpstreamError(f"{what} printed more than {MAX_TOKEN_BYTES} bytes")
    return _checked(out.decode("utf-8", "replace"), what)


def _read_file(path: str) -> str:
    what = f"file {path[:200]!r}"
    try:
        with Path(path).open("rb") as handle:
            data = handle.read(MAX_TOKEN_BYTES + 1)
    except OSError as exc:
        raise UpstreamError(f"{what} could not be read ({type(exc).__name__})") from None
    if len(data) > MAX_TOKEN_BYTES:
        raise UpstreamError(f"{what} holds more than {MAX_TOKEN_BYTES} bytes")
    return _checked(data.decode("utf-8", "replace"), what)


async def read_token(
    source: TokenSource, caller: UpstreamCaller, read_secret: SecretReader, *, server: str
) -> str:
    """The token ``source`` names for ``caller``; UpstreamAuthorizationError when the source is the
    inbound identity and this caller has none (an agent token, the indexer, a job without a person)."""
    if source.inbound:
        if caller.inbound_token is None:
            raise UpstreamAuthorizationError(
                f"{server}: this upstream is reached as the calling person, through their inbound OAuth "
                "identity: sign in to foldgate through the tenant's OAuth (an agent token carries none)"
            )
        return caller.inbound_token
    if source.secret is not None:
        return _checked(await read_secret(source.secret), f"secret {source.secret!r}")
    if source.file is not None:
        return await asyncio.to_thread(_read_file, source.file)
    assert source.command is not None  # the config requires exactly one source
    return await _run(source.command)
