"""A local AWS-API server for benchmarks (and the tests): ``moto_server`` on loopback, and the catalog
table created exactly as template.yaml declares it, so what is measured is what is deployed."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from foldgate.dev.procs import free_port, stop_process

__all__ = [
    "aws_env",
    "aws_environment",
    "create_table_from_template",
    "moto_server",
    "patched_environ",
    "start_moto",
    "template_resource",
    "template_resources",
]

TEMPLATE = Path(__file__).resolve().parents[4] / "template.yaml"


def start_moto(timeout: float = 20.0) -> tuple[str, subprocess.Popen[bytes]]:
    """Launch ``moto_server`` on a free loopback port; returns its endpoint URL and the process."""
    exe = Path(sys.executable).parent / "moto_server"
    if not exe.exists():
        found = shutil.which("moto_server")
        if found is None:
            raise RuntimeError("moto_server is missing: run `make venv` (moto[server] is a dev dependency)")
        exe = Path(found)
    port = free_port()
    proc = subprocess.Popen(
        [str(exe), "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"moto_server exited with {proc.returncode} before answering on {endpoint}")
        try:
            with urllib.request.urlopen(endpoint + "/moto-api/", timeout=1):
                return endpoint, proc
        except urllib.error.HTTPError:
            return endpoint, proc  # any HTTP answer means it is serving
        except OSError:
            pass
        if time.monotonic() > deadline:
            stop_process(proc)
            raise TimeoutError(f"moto_server did not answer on {endpoint} within {timeout}s")
        time.sleep(0.05)


def aws_env(endpoint: str, region: str = "us-east-1") -> dict[str, str | None]:
    """Environment for boto3 talking to ``endpoint`` only: fake keys, one region.

    ``None`` values are removed: service-specific endpoints and profiles would win over ours, and the
    user's config/credential files and the instance metadata service must never be consulted.
    """
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": None,
        "AWS_SECURITY_TOKEN": None,
        "AWS_PROFILE": None,
        "AWS_DEFAULT_PROFILE": None,
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_ENDPOINT_URL_DYNAMODB": None,
        "AWS_ENDPOINT_URL_SSM": None,
        "AWS_ENDPOINT_URL_SQS": None,
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@contextlib.contextmanager
def patched_environ(values: dict[str, str | None]) -> Iterator[None]:
    """Set (or, for None, remove) these variables for the block, then restore exactly what was there."""
    saved = {name: os.environ.get(name) for name in values}
    try:
        _apply(values)
        yield
    finally:
        _apply(saved)


@contextlib.contextmanager
def aws_environment(endpoint: str) -> Iterator[None]:
    """Set :func:`aws_env` in ``os.environ`` for the block, then restore exactly what was there."""
    with patched_environ(aws_env(endpoint)):
        yield


def _apply(values: dict[str, str | None]) -> None:
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    # boto3's default session and the stores' shared client cache credentials and endpoints on first
    # use: drop them so clients made afterwards read the environment as it is now.
    import boto3

    from foldgate.store.connections import dynamodb_client

    boto3.DEFAULT_SESSION = None
    dynamodb_client.cache_clear()


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """A moto_server for the block, with this process's boto3 pointed at it."""
    endpoint, proc = start_moto()
    try:
        with aws_environment(endpoint):
            yield endpoint
    finally:
        stop_process(proc)


class _CfnLoader(yaml.SafeLoader):
    """A SafeLoader that reads CloudFormation short tags (!Ref, !Sub, !GetAtt, !If...) as plain values."""


def _cfn_tag(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    assert isinstance(node, yaml.MappingNode)
    return loader.construct_mapping(node, deep=True)


_CfnLoader.add_multi_constructor("!", _cfn_tag)


def template_resources(path: Path = TEMPLATE) -> dict[str, Any]:
    """Every resource of template.yaml by logical id (short tags read as plain values)."""
    doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_CfnLoader)  # a SafeLoader subclass
    resources: dict[str, Any] = doc["Resources"]
    return resources


def template_resource(name: str, path: Path = TEMPLATE) -> dict[str, Any]:
    """One resource of template.yaml (Type, Properties...)."""
    resource: dict[str, Any] = template_resources(path)[name]
    return resource


def create_table_from_template(client: Any, table_name: str, resource: str = "CatalogTable") -> None:
    """Create ``table_name`` with exactly the keys, indexes, billing and TTL template.yaml deploys."""
    props = template_resource(resource)["Properties"]
    kwargs: dict[str, Any] = {
        "TableName": table_name,
        "AttributeDefinitions": props["AttributeDefinitions"],
        "KeySchema": props["KeySchema"],
        "BillingMode": props.get("BillingMode", "PROVISIONED"),
    }
    for optional in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes", "ProvisionedThroughput"):
        if optional in props:
            kwargs[optional] = props[optional]
    client.create_table(**kwargs)
    client.get_waiter("table_exists").wait(
        TableName=table_name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50}
    )
    ttl = props.get("TimeToLiveSpecification")
    if ttl is not None:
        client.update_time_to_live(
            TableName=table_name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": bool(ttl["Enabled"])},
        )
