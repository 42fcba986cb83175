"""Workload JWT sources: STS's GetWebIdentityToken is asked on the regional endpoint with exactly the
configured audience, algorithm and lifetime (botocore's Stubber checks the request against the service
model); a file is re-read only when it changed; a command runs without a shell, bounded in time and
output; anything that is not a compact JWT is refused without echoing it."""

from __future__ import annotations

import datetime
import os
import sys
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
from foldgate.upstream.oauth.assertions import AssertionReader, WorkloadAssertionError, sts_client

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
        ("import time; time.sleep(30)", {"timeout_s": 0.5}, "no answer within 0.5 s"),
        ("import sys; sys.stdout.write('a' * 100000)", {"max_bytes": 1024}, "exceeds 1024 bytes"),
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
