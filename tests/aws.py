"""AWS on loopback for tests: a real moto_server process and the table exactly as template.yaml declares
it. The implementation lives in the package (``foldgate.dev.bench.moto``) because ``foldgate bench cloud``
needs the same server and table; tests import it from here."""

from __future__ import annotations

from foldgate.dev.bench.moto import (
    TEMPLATE,
    aws_env,
    aws_environment,
    create_table_from_template,
    start_moto,
    template_resource,
)
from foldgate.dev.procs import stop_process

REGION = "us-east-1"

__all__ = [
    "REGION",
    "TEMPLATE",
    "aws_env",
    "aws_environment",
    "create_table_from_template",
    "start_moto",
    "stop_process",
    "template_resource",
]
