"""Read a token a :class:`~foldgate.config.token_source.TokenSource` names, to hand over as it is.

``inbound`` is the calling person's verified inbound OAuth access token (bound to the caller by
:func:`foldgate.model.caller.calling_as`, never to the shared subject); ``secret`` a secret parameter;
``file`` a file re-read each time (a sidecar may rotate it); ``command`` a program run without a shell,
its standard output the token (read no further than the cap; on a timeout or a flood the program ends
with its whole process group, children that hold the output open too: both through
:mod:`foldgate.upstream.oauth.local_source`, as workload_jwt's assertion sources). A token is never
logged and never put in an error message: errors say which source failed and why, never what it held.
"""

from __future__ import annotations

import asyncio
from typing import Final

from foldgate.config.token_source import TokenSource
from foldgate.errors import UpstreamAuthorizationError, UpstreamError
from foldgate.model.caller import UpstreamCaller
from foldgate.upstream.oauth.local_source import LocalSourceError, read_file_capped, run_capped
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
        out = await run_capped(command, cap=MAX_TOKEN_BYTES, timeout_s=COMMAND_TIMEOUT_S)
    except LocalSourceError as exc:
        raise UpstreamError(f"{what} {exc.message}") from None
    return _checked(out.decode("utf-8", "replace"), what)


def _read_file(path: str) -> str:
    what = f"file {path[:200]!r}"
    try:
        data, _status = read_file_capped(path, MAX_TOKEN_BYTES)
    except LocalSourceError as exc:
        raise UpstreamError(f"{what} {exc.message}") from None
    except OSError as exc:
        raise UpstreamError(f"{what} could not be read ({type(exc).__name__})") from None
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
