"""The cloud store for ``foldgate bench coldstart --store dynamodb``: what a deployed init talks to.

A deployed function's init opens the DynamoDB store, reads the token HMAC secret from Parameter Store
and builds the KMS grant cipher: boto3's import, its clients and one SSM round trip that the SQLite
figures leave out. This starts ``moto_server`` on loopback with the catalog table created as
template.yaml declares it, the secret parameter and a KMS key, and gives the environment of the
template's ``Globals`` (less what only a request reads) pointed at it.
"""

from __future__ import annotations

import contextlib
import secrets
import uuid
from collections.abc import Iterator

import boto3

from foldgate.dev.bench.moto import aws_env, create_table_from_template, start_moto
from foldgate.dev.procs import stop_process

__all__ = ["HANDLER_ENV", "cloud_stack"]

PREFIX = "/foldgate"
# What one function's own Environment adds to the Globals (template.yaml).
HANDLER_ENV: dict[str, dict[str, str]] = {"mcp": {"FOLDGATE_SERVE_CODE": "false"}}


@contextlib.contextmanager
def cloud_stack() -> Iterator[dict[str, str]]:
    """A moto-backed stack for the block; yields the functions' environment (AWS and FOLDGATE_*)."""
    endpoint, proc = start_moto()
    try:
        aws = {k: v for k, v in aws_env(endpoint).items() if v is not None}
        session = boto3.Session(
            aws_access_key_id="testing", aws_secret_access_key="testing", region_name=aws["AWS_REGION"]
        )
        table = f"foldgate-cold-{uuid.uuid4().hex[:8]}"
        create_table_from_template(session.client("dynamodb", endpoint_url=endpoint), table)
        session.client("ssm", endpoint_url=endpoint).put_parameter(
            Name=f"{PREFIX}/secrets/token-hmac-key", Value=secrets.token_urlsafe(48), Type="SecureString"
        )
        key = session.client("kms", endpoint_url=endpoint).create_key()["KeyMetadata"]["KeyId"]
        yield aws | {
            "FOLDGATE_STORE": "dynamodb",
            "FOLDGATE_TABLE_NAME": table,
            "FOLDGATE_CONFIG_SOURCE": "table",
            "FOLDGATE_CONFIG_PREFIX": PREFIX,
            "FOLDGATE_ALLOW_TENANT_HEADER": "false",
            "FOLDGATE_AUTH_REQUIRED": "true",
            "FOLDGATE_ALLOW_PRIVATE_UPSTREAMS": "false",
            "FOLDGATE_GRANT_KMS_KEY_ID": key,
            "POWERTOOLS_SERVICE_NAME": "foldgate-mcp",
            "OPENBLAS_NUM_THREADS": "1",
        }
    finally:
        stop_process(proc)
