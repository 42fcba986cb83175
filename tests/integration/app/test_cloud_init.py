"""What a cloud McpFunction init costs in AWS clients: against moto_server as deployed (DynamoDB store,
table config source, the token secret in Parameter Store, the KMS grant key), the init makes one
DynamoDB and one SSM client, reads the token secret once, and loads no Powertools Parameters (the
headers-secret and OAuth client-secret readers make theirs on their first read).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from foldgate.dev.bench.coldstart_cloud import HANDLER_ENV, cloud_stack
from tests.conftest import REPO

_CHILD = """
import boto3, json, runpy, sys
import foldgate.auth.secrets as secrets
clients, reads = [], []
make, read = boto3.client, secrets.read_secret_parameter
boto3.client = lambda *a, **k: (clients.append(a[0] if a else k["service_name"]), make(*a, **k))[1]
secrets.read_secret_parameter = lambda *a, **k: (reads.append(a[0]), read(*a, **k))[1]
runpy.run_path({app!r})
print(json.dumps([clients, reads, sorted(sys.modules)]))
"""


def test_a_cloud_init_makes_two_clients_and_reads_the_token_secret_once() -> None:
    with cloud_stack() as cloud:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "FOLDGATE_", "OTEL_"))}
        env |= cloud | HANDLER_ENV["mcp"] | {"PYTHONPATH": str(REPO / "shared")}
        code = _CHILD.format(app=str(REPO / "functions" / "mcp" / "app.py"))
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
        )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "unavailable" not in out.stderr, out.stderr[-2000:]  # every part of the init opened
    clients, reads, modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(clients) == ["dynamodb", "ssm"]
    assert reads == ["/foldgate/secrets/token-hmac-key"]
    assert "aws_lambda_powertools.utilities.parameters" not in modules
