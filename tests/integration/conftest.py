"""Integration fixtures: AWS services on loopback (one moto_server per session) and their resources."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from tests.aws import aws_environment, create_table_from_template, start_moto, stop_process


@pytest.fixture(autouse=True)
def fresh_dynamodb_client() -> None:
    """Tests hook into the process-wide DynamoDB client (botocore events): give each test its own."""
    from foldgate.store.connections import dynamodb_client

    dynamodb_client.cache_clear()


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A moto_server for the whole session; boto3 in this process talks to it (env set, then restored)."""
    endpoint, proc = start_moto()
    try:
        with aws_environment(endpoint):
            yield endpoint
    finally:
        stop_process(proc)


@pytest.fixture
def dynamo_table(moto_endpoint: str) -> Iterator[str]:
    """A fresh table named uniquely, created from template.yaml's CatalogTable so it cannot drift."""
    import boto3

    client = boto3.client("dynamodb")
    name = f"foldgate-test-{uuid.uuid4().hex[:12]}"
    create_table_from_template(client, name)
    yield name
    client.delete_table(TableName=name)
