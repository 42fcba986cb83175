"""The MCP function's cold start pays for tracing only when it traces: with no OTLP endpoint, its init
loads neither the OpenTelemetry SDK nor the exporter (nor Powertools Metrics, nor prometheus_client);
with one set the standard way, it loads the SDK and records spans, and the OTLP exporter loads with the
first export, on the batch processor's thread."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.procs import REPO

HEAVY = ("opentelemetry.sdk", "opentelemetry.exporter", "aws_lambda_powertools.metrics", "prometheus_client")
_CHILD = """
import json, runpy, sys
runpy.run_path({app!r})
from foldgate.telemetry import tracing
loaded = sorted({{m for m in sys.modules for h in {heavy!r} if m == h or m.startswith(h + ".")}})
print(json.dumps({{"loaded": loaded, "tracing": tracing.tracing_on()}}))
"""


def _init(tmp_path: Path, function: str, **extra: str) -> dict[str, object]:
    (tmp_path / "cfg.json").write_text('{"servers": []}')
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "FOLDGATE_", "POWERTOOLS_"))}
    env.update(
        FOLDGATE_SQLITE_PATH=str(tmp_path / "s.sqlite3"),
        FOLDGATE_CONFIG_FILE=str(tmp_path / "cfg.json"),
        FOLDGATE_EMBEDDING_PROVIDER="none",
        PYTHONPATH=str(REPO / "shared"),
        **extra,
    )
    code = _CHILD.format(app=str(REPO / "functions" / function / "app.py"), heavy=HEAVY)
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=120
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


@pytest.mark.parametrize("function", ["mcp", "code"])
def test_without_an_endpoint_init_loads_no_tracing_or_metrics_library(tmp_path: Path, function: str) -> None:
    assert _init(tmp_path, function) == {"loaded": [], "tracing": False}


def test_with_an_endpoint_init_loads_the_sdk_and_traces(tmp_path: Path) -> None:
    got = _init(tmp_path, "mcp", OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert got["tracing"] is True
    loaded = got["loaded"]
    assert isinstance(loaded, list)
    assert "opentelemetry.sdk" in loaded
    assert not [m for m in loaded if m.startswith("opentelemetry.exporter")]
