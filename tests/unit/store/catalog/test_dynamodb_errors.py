"""How the DynamoDB catalog store reads a botocore failure: a transport error that carries
``response = None`` (botocore's read timeouts do) is a reason without an AWS code, never an
AttributeError escaping the store's error mapping."""

from __future__ import annotations

from botocore.exceptions import ClientError, ReadTimeoutError

from foldgate.store.catalog.dynamodb import _code, _describe


def test_a_read_timeout_without_a_response_has_no_code_and_a_reason() -> None:
    exc = ReadTimeoutError(endpoint_url="http://127.0.0.1:1/")
    exc.response = None  # type: ignore[attr-defined]  # as botocore leaves it on some transport errors
    assert _code(exc) is None
    assert "timeout" in _describe(exc).lower()


def test_a_client_error_names_its_code() -> None:
    error = {"Error": {"Code": "ProvisionedThroughputExceededException", "Message": "slow"}}
    exc = ClientError(error, "GetItem")  # type: ignore[arg-type]  # botocore's TypedDict, given as a dict
    assert _code(exc) == "ProvisionedThroughputExceededException"
    assert "ProvisionedThroughputExceededException" in _describe(exc)
