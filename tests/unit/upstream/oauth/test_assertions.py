"""Workload JWT sources: STS's GetWebIdentityToken is asked on the regional endpoint with exactly the
configured audience, algorithm and lifetime (botocore's Stubber checks the request against the service
model); a file is re-read only when it changed, and read no further than its cap; a command runs
without a shell, bounded in time and output, its whole process group ended on a timeout; anything
that is not a compact JWT is refused without echoing it."""

from __future__ import annotations

import asyncio
import datetime
import os
import sys
import threading
from pathlib import Path

import boto3
import pytest
from botocore.stub import Stubber

from foldgate.config.workload_assertion import (
    AwsStsAssertion,
    CommandAssertion,
    FileAssertion,
    SecretAssertion,
)
from foldgate.upstream.oauth import assertions
from foldgate.upstream.oauth.assertions import (
    MAX_ASSERTION_BYTES,
    AssertionReader,
    WorkloadAssertionError,
    sts_client,
)

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ3b3JrbG9hZCJ9.c2lnbmF0dXJl"
OTHER = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJvdGhlciJ9.c2ln"


async def no_secret(name: str) -> str:
    raise AssertionError(f"no secret expected, asked for {name}")


def stubbed_sts() -> tuple[object, Stubber]:
    client = boto3.client("sts", region_name="eu-west-1", aws_access_key_id="x", aws_secret_access_key="y")
    return client, Stubber(client)


async def test_sts_is_asked_for_the_configured_token() -> None:
    client, stub = stubbed_sts()
    expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(minutes=5)
    stub.add_response(
        "get_web_identity_token",
        {"WebIdentityToken": JWT, "Expiration": expires},
        expected_params={
            "Audience": ["https://as.example.com"],
            "SigningAlgorithm": "ES384",
            "DurationSeconds": 900,
        },
    )
    source = AwsStsAssertion(
        audience="https://as.example.com", signing_algorithm="ES384", duration_seconds=900
    )
    with stub:
        assert await AssertionReader(no_secret, sts=client).read(source) == JWT
    stub.assert_no_pending_responses()


async def test_an_sts_refusal_names_its_code_and_what_to_check() -> None:
    client, stub = stubbed_sts()
    stub.add_client_error(
        "get_web_identity_token", service_error_code="OutboundWebIdentityFederationDisabledException"
    )
    with (
        stub,
        pytest.raises(
            WorkloadAssertionError, match=r"OutboundWebIdentityFederationDisabledException.*enabled"
        ),
    ):
        await AssertionReader(no_secret, sts=client).read(AwsStsAssertion(audience="a"))


def test_the_sts_client_is_regional_and_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-southeast-2")
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_STS"):  # other tests' moto_server
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(assertions, "_clients", {})
    first = sts_client("eu-north-1")
    assert first.meta.endpoint_url == "https://sts.eu-north-1.amazonaws.com"
    assert sts_client("eu-north-1") is first
    # No region configured: the function's own (the process's), still a regional endpoint.
    assert sts_client(None).meta.endpoint_url == "https://sts.ap-southeast-2.amazonaws.com"


async def test_a_file_is_reread_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(JWT + "\n")
    reader = AssertionReader(no_secret)
    source = FileAssertion(path=str(path))
    assert await reader.read(source) == JWT
    path.write_text(OTHER)  # a rotation: another size and time
    os.utime(path, ns=(1, 2))
    assert await reader.read(source) == OTHER


async def test_a_missing_or_foreign_file_is_refused_without_its_content(tmp_path: Path) -> None:
    reader = AssertionReader(no_secret)
    with pytest.raises(WorkloadAssertionError, match="No such file"):
        await reader.read(FileAssertion(path=str(tmp_path / "absent")))
    page = tmp_path / "page"
    page.write_text("<html>secret-looking page</html>")
    with pytest.raises(WorkloadAssertionError, match="not a compact JWT") as info:
        await reader.read(FileAssertion(path=str(page)))
    assert "secret-looking" not in info.value.message


def py(code: str) -> list[str]:
    return [sys.executable, "-c", code]


async def test_a_command_prints_the_token() -> None:
    source = CommandAssertion(argv=py(f"print({JWT!r})"))
    assert await AssertionReader(no_secret).read(source) == JWT


@pytest.mark.parametrize(
    ("code", "limits", "why"),
    [
        ("import sys; sys.exit(3)", {}, "exit status 3"),
        ("import time; time.sleep(30)", {"timeout_s": 0.5}, "did not finish within 0.5 s"),
        ("import sys; sys.stdout.write('a' * 100000)", {"max_bytes": 1024}, "printed more than 1024 bytes"),
        ("print('usage: agent [--jwt]')", {}, "not a compact JWT"),
    ],
)
async def test_a_command_is_bounded(code: str, limits: dict[str, float], why: str) -> None:
    with pytest.raises(WorkloadAssertionError, match=why) as info:
        await AssertionReader(no_secret).read(CommandAssertion(argv=py(code), **limits))  # type: ignore[arg-type]
    assert "usage" not in info.value.message


async def test_a_secret_is_read_through_the_secret_reader() -> None:
    async def read(name: str) -> str:
        return {"wif/jwt": f" {JWT}\n"}[name]

    assert await AssertionReader(read).read(SecretAssertion(name="wif/jwt")) == JWT


async def test_a_command_whose_child_keeps_its_output_open_ends_with_its_whole_group(tmp_path: Path) -> None:
    # A program that leaves a child behind holding standard output: the timeout ends the whole group
    # (the same implementation as the exchange kinds' command sources: upstream.oauth.local_source).
    pid_file = tmp_path / "child"
    script = (
        "import subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        f"sys.stdout.write({JWT!r})\n"
    )
    with pytest.raises(WorkloadAssertionError, match="did not finish within 1 s"):
        await AssertionReader(no_secret).read(CommandAssertion(argv=py(script), timeout_s=1.0))
    stat = Path(f"/proc/{pid_file.read_text()}/stat")
    for _ in range(50):  # the kill is asynchronous; an unreaped child is a zombie ("Z"): gone too
        if not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the command's child outlived it")


async def test_a_file_is_read_no_further_than_its_cap(tmp_path: Path) -> None:
    # A FIFO's size says nothing (0): a stat-then-read source would wait for its writer to finish and
    # buffer everything; the capped read stops one byte past the cap and refuses at once.
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = threading.Event()

    def writer() -> None:
        with fifo.open("wb") as out:
            out.write(b"a" * (MAX_ASSERTION_BYTES + 10))
            out.flush()
            done.wait(10)  # held open: only a reader that stops at the cap returns before this

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    try:
        with pytest.raises(WorkloadAssertionError, match=f"more than {MAX_ASSERTION_BYTES} bytes"):
            await asyncio.wait_for(AssertionReader(no_secret).read(FileAssertion(path=str(fifo))), 5)
    finally:
        done.set()
        thread.join(5)
