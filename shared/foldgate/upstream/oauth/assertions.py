"""The workload JWT a ``workload_jwt`` server presents (see :mod:`foldgate.config.workload_assertion`).

* ``aws_sts``: STS ``GetWebIdentityToken`` for the role this process runs as. One boto3 client per
  region, built on first use and kept (a client is thread-safe and costs ~50 ms to build); always the
  regional endpoint (the action is not served by the global ``sts.amazonaws.com``). The call runs in a
  worker thread: botocore is blocking.
* ``file``: read again only when its modification time or size changed (a projected token is
  rewritten in place by the kubelet); otherwise the value read last.
* ``command``: run without a shell, its output capped and its time bounded; killed on timeout.
* ``secret``: through the process's secret reader (cached as every secret is).

A value is accepted only when it looks like a compact JWS (three base64url parts): what a source
printed by mistake (an error page, a usage text) never reaches an authorization server. No value is
ever logged or put in an error message.
"""

from __future__ import annotations

import asyncio
import re
import threading
from pathlib import Path
from typing import Any, Final

from foldgate.config.workload_assertion import (
    AwsStsAssertion,
    CommandAssertion,
    FileAssertion,
    SecretAssertion,
)
from foldgate.errors import UpstreamError
from foldgate.upstream.oauth.registration import SecretReader

__all__ = ["AssertionReader", "WorkloadAssertionError", "sts_client"]

_JWS: Final = re.compile(r"^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$")
MAX_ASSERTION_BYTES: Final = 65536

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


class WorkloadAssertionError(UpstreamError):
    """The workload JWT could not be had from its source (the message names the source, never a value)."""


def sts_client(region: str | None) -> Any:
    """The STS client of ``region`` (None: the process's region, the function's own), built once."""
    # boto3 loads with the first aws_sts assertion, not at init.
    import boto3

    key = region or ""
    with _clients_lock:
        client = _clients.get(key)
        if client is None:
            session = boto3.session.Session()
            name = region or session.region_name
            if not name:
                raise WorkloadAssertionError(
                    "aws_sts: no region (set assertion.region; a Lambda function has its own)"
                )
            # region_name picks the regional endpoint sts.<region>.amazonaws.com (botocore's default
            # for STS since 1.36): GetWebIdentityToken is not on the global endpoint.
            client = _clients[key] = session.client("sts", region_name=name)
    return client


def _checked(value: str, what: str) -> str:
    token = value.strip()
    if len(token) > MAX_ASSERTION_BYTES or not _JWS.match(token):
        raise WorkloadAssertionError(f"{what}: the value is not a compact JWT (three base64url parts)")
    return token


async def _read_capped(stream: asyncio.StreamReader, cap: int) -> bytes:
    """Everything up to end of file, or the first ``cap + 1`` bytes (the caller refuses those)."""
    out = bytearray()
    while len(out) <= cap:
        chunk = await stream.read(cap + 1 - len(out))
        if not chunk:
            break
        out.extend(chunk)
    return bytes(out)


class AssertionReader:
    """Reads workload JWTs from their sources (one per process; see the module docstring)."""

    def __init__(self, read_secret: SecretReader, *, sts: Any = None) -> None:
        self.read_secret = read_secret
        self._sts = sts  # a client to use for every region (tests: botocore's Stubber on it)
        self._files: dict[str, tuple[int, int, str]] = {}

    async def read(self, source: object) -> str:
        """The current workload JWT of ``source``; WorkloadAssertionError when it cannot be had."""
        if isinstance(source, AwsStsAssertion):
            return await asyncio.to_thread(self._from_sts, source)
        if isinstance(source, FileAssertion):
            return await asyncio.to_thread(self._from_file, source)
        if isinstance(source, CommandAssertion):
            return await self._from_command(source)
        if isinstance(source, SecretAssertion):
            return _checked(await self.read_secret(source.name), f"secret {source.name!r}")
        raise WorkloadAssertionError(f"unknown assertion source {type(source).__name__}")

    def _from_sts(self, source: AwsStsAssertion) -> str:
        # botocore's errors load with the first aws_sts assertion, not at init.
        from botocore.exceptions import BotoCoreError, ClientError

        client = self._sts if self._sts is not None else sts_client(source.region)
        try:
            answer = client.get_web_identity_token(
                Audience=[source.audience],
                SigningAlgorithm=source.signing_algorithm,
                DurationSeconds=source.duration_seconds,
            )
        except ClientError as exc:
            code = str(exc.response.get("Error", {}).get("Code", "error"))[:100]
            raise WorkloadAssertionError(
                f"aws_sts: STS refused GetWebIdentityToken ({code}): check that outbound identity "
                "federation is enabled for the account and the role may call it for this audience"
            ) from None
        except BotoCoreError as exc:
            raise WorkloadAssertionError(f"aws_sts: STS unreachable ({type(exc).__name__})") from None
        return _checked(str(answer.get("WebIdentityToken", "")), "aws_sts")

    def _from_file(self, source: FileAssertion) -> str:
        path = Path(source.path)
        try:
            stat = path.stat()
            held = self._files.get(source.path)
            if held is not None and held[:2] == (stat.st_mtime_ns, stat.st_size):
                return held[2]
            if stat.st_size > MAX_ASSERTION_BYTES:
                raise WorkloadAssertionError(f"file {source.path}: larger than {MAX_ASSERTION_BYTES} bytes")
            value = _checked(path.read_text(encoding="utf-8"), f"file {source.path}")
        except OSError as exc:
            raise WorkloadAssertionError(
                f"file {source.path}: {exc.strerror or type(exc).__name__}"
            ) from None
        except UnicodeDecodeError:
            raise WorkloadAssertionError(f"file {source.path}: not text") from None
        self._files[source.path] = (stat.st_mtime_ns, stat.st_size, value)
        return value

    async def _from_command(self, source: CommandAssertion) -> str:
        name = Path(source.argv[0]).name
        try:
            proc = await asyncio.create_subprocess_exec(
                *source.argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.DEVNULL,
            )
        except OSError as exc:
            raise WorkloadAssertionError(f"command {name}: {exc.strerror or type(exc).__name__}") from None
        assert proc.stdout is not None  # stdout=PIPE
        loop = asyncio.get_running_loop()
        deadline = loop.time() + source.timeout_s
        try:
            out = await asyncio.wait_for(_read_capped(proc.stdout, source.max_bytes), source.timeout_s)
            if len(out) > source.max_bytes:
                raise WorkloadAssertionError(f"command {name}: output exceeds {source.max_bytes} bytes")
            code = await asyncio.wait_for(proc.wait(), max(0.0, deadline - loop.time()))
        except TimeoutError:
            raise WorkloadAssertionError(f"command {name}: no answer within {source.timeout_s:g} s") from None
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        if code != 0:
            raise WorkloadAssertionError(f"command {name}: exit status {code}")
        try:
            return _checked(out.decode("utf-8"), f"command {name}")
        except UnicodeDecodeError:
            raise WorkloadAssertionError(f"command {name}: output is not text") from None
