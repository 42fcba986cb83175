"""Grant-store fixtures: a KMS key on the session's moto_server (which serves every AWS API on one port)."""

from __future__ import annotations

import pytest


@pytest.fixture
def kms_key(moto_endpoint: str) -> str:
    """A fresh symmetric KMS key's id, like the stack's GrantKey."""
    import boto3

    resp = boto3.client("kms").create_key(KeySpec="SYMMETRIC_DEFAULT", KeyUsage="ENCRYPT_DECRYPT")
    return str(resp["KeyMetadata"]["KeyId"])
