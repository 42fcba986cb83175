"""The tenant config files the config-as-code tests apply and export: every file under
tests/data/tenants/ (YAML or JSON), and the config the demo (demo/run.sh) generates, produced by the
script's own lines with made-up ports and paths."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TENANTS = ROOT / "tests" / "data" / "tenants"


def tenant_files() -> list[Path]:
    """Every tenant config file the tests keep (YAML or JSON)."""
    return sorted(p for p in TENANTS.iterdir() if p.suffix in (".yaml", ".yml", ".json"))


def demo_config(folder: Path) -> Path:
    """The config demo/run.sh writes, by running the script's config block (so a change to the demo's
    config is what these tests apply) with loopback ports and made-up program paths."""
    script = (ROOT / "demo" / "run.sh").read_text(encoding="utf-8")
    start = script.index('config="$state/foldgate.yaml"')
    end = script.index('} > "$config"', start) + len('} > "$config"')
    (folder / "replay.log").write_text(
        "github (replay)\thttp://127.0.0.1:40011/mcp\nslack\thttp://127.0.0.1:40012/mcp\n", encoding="utf-8"
    )
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "state": str(folder),
        "scratch": str(folder / "scratch"),
        "node_bin": "/opt/demo/node_modules/.bin",
        "demo_bin": "/opt/demo/venv/bin",
        "everything_port": "40010",
        "oauth_server": "protected",
        "protected_port": "40013",
    }
    subprocess.run(["bash", "-c", script[start:end]], env=env, check=True, timeout=30)
    return folder / "foldgate.yaml"


def _local_only(server: dict[str, Any]) -> bool:
    """A stdio server, or one whose auth reads a token (or a workload assertion) from a file or a
    command."""
    auth = server.get("auth") or {}
    sources = [auth.get(k) for k in ("subject_token", "actor_token", "listing_subject_token")]
    reads = any(isinstance(src, dict) and {"file", "command"} & set(src) for src in sources)
    assertion = auth.get("assertion")  # workload_jwt
    reads = reads or (isinstance(assertion, dict) and assertion.get("source") in ("file", "command"))
    return server.get("transport") == "stdio" or reads


def cloud_part(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without its local-only servers (the cloud runs no program and reads no file of
    the host's: stdio servers, token sources from a file or a command)."""
    servers = [s for s in doc.get("servers") or [] if not _local_only(s)]
    return {**doc, "servers": servers}
