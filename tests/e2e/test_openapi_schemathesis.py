"""The admin API's OpenAPI document is exact: schemathesis (`st run --checks all`, every phase including
the stateful one over the document's links) against `foldgate serve` with the operator key finds no
mismatch between the document and the API: no undocumented status, no schema-valid request refused, no
schema-invalid request accepted, no response off its schema, no wrong Allow header, no server error.

Bounded: a fixed seed and a few examples per operation keep it to well under a minute of requests.
The one configured value is the activity cursor, which is opaque and bound to its listing: a valid one
only ever comes from the previous page, so the generated runs ask for the first page and the stateful
run follows the NextPage link with the real cursors; and its format is JSON, whose body the link reads
(the JSON-lines export has no cursor to follow: it streams every page; tests/unit/edge cover it).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.procs import foldgate_serve, replay

pytestmark = pytest.mark.e2e

OPERATOR = "schemathesis-operator-key-0123456789"
CONFIG = """\
[[operations]]
include-path = "/api/v1/activity"
parameters = { cursor = "", format = "json" }
"""


def _st() -> str:
    st = Path(sys.executable).with_name("st")
    if not st.exists():
        found = shutil.which("st")
        if found is None:
            pytest.skip("schemathesis is not installed: run `make venv` (the dev extra pins it)")
        return found
    return str(st)


def test_schemathesis_finds_no_mismatch_between_the_document_and_the_api(tmp_path: Path) -> None:
    st = _st()
    with replay() as upstream:
        servers = [{"name": name, "url": url} for name, url in upstream.urls.items()]
        env = {"FOLDGATE_OPERATOR_KEY": OPERATOR}
        with foldgate_serve({"servers": servers}, tmp_path, "--interval", "600", env=env) as base:
            (tmp_path / "schemathesis.toml").write_text(CONFIG)
            cmd = [
                st, "--config-file", str(tmp_path / "schemathesis.toml"),
                "run", f"{base}/api/v1/openapi.json", "-H", f"Authorization: Bearer {OPERATOR}",
                "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful",
                "--max-examples", "15", "--seed", "20261207", "--request-timeout", "10", "--no-color",
            ]  # fmt: skip
            done = subprocess.run(
                cmd, capture_output=True, text=True, timeout=480, cwd=tmp_path,
                env={**os.environ, "SCHEMATHESIS_TELEMETRY": "false"},
            )  # fmt: skip
    report = done.stdout + done.stderr
    (tmp_path / "schemathesis.out").write_text(report)
    assert done.returncode == 0, report[-6000:]
    # Every generated case passed every check, every operation was tested, and each phase ran (the
    # examples phase has nothing to run: the document gives no examples).
    assert re.search(r"(\d+) generated, \1 passed", report), report[-3000:]
    selected = re.search(r"Selected: (\d+)/(\d+)\s+Tested: (\d+)", report)
    assert selected is not None, report[-3000:]
    assert len(set(selected.groups())) == 1, report[-3000:]
    for phase in ("Coverage", "Fuzzing", "Stateful"):
        assert f"✅ {phase}" in report, report[-3000:]
