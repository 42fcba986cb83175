"""Run a Lambda function's init (``functions/<name>/app.py``) in a fresh interpreter, as a new instance
does, with an empty local config: what the init tests read from such a process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

__all__ = ["after_init"]


def after_init(name: str, tmp: Path, code: str) -> str:
    """The last line ``code`` prints, run right after ``functions/<name>/app.py``'s init."""
    config = tmp / "cfg.json"
    config.write_text(json.dumps({"servers": []}))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FOLDGATE_", "OTEL_", "AWS_"))}
    env.update(
        PYTHONPATH=str(REPO / "shared"),
        FOLDGATE_SQLITE_PATH=str(tmp / "s.sqlite3"),
        FOLDGATE_CONFIG_FILE=str(config),
    )
    app = REPO / "functions" / name / "app.py"
    out = subprocess.run(
        [sys.executable, "-c", f"import runpy; runpy.run_path({str(app)!r})\n{code}"],
        capture_output=True, text=True, env=env, timeout=120, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]
