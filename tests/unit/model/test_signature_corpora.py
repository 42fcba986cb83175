"""Soundness over every real catalog in ../shared/corpora: our own check and the team's sigcheck."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from foldgate.dev.corpus import load_catalog
from tests.conftest import CORPORA, corpus_path
from tests.helpers import soundness_problems

CORPUS_NAMES = ["github-mcp-server", "livemcpbench", "mcp-flow", "mcp-proxy-snapshots", "mcptoolbench-pp"]


@pytest.mark.corpus
@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_every_flat_signature_in_the_corpus_is_sound(name: str) -> None:
    tools = load_catalog(corpus_path(name, "tools.jsonl"))
    bad = []
    for tool in tools:
        sig = tool.signature
        if not sig.lossy and isinstance(tool.input_schema, dict):
            problems = soundness_problems(tool.input_schema, sig.params)
            if problems:
                bad.append((tool.key, sig.params, problems))
    assert bad == []


@pytest.mark.corpus
@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_sigcheck_reports_no_violation(name: str, tmp_path: Path) -> None:
    catalog = corpus_path(name, "tools.jsonl")
    sigcheck = CORPORA.parent / "tools" / "sigcheck.py"
    if not sigcheck.exists():
        pytest.skip("../shared/tools/sigcheck.py is absent")
    sigs = tmp_path / "sigs.jsonl"
    with sigs.open("w", encoding="utf-8") as out:
        for tool in load_catalog(catalog):
            row = {"id": f"{tool.server}__{tool.name}", "signature": tool.signature.params}
            out.write(json.dumps(row | {"lossy": tool.signature.lossy}) + "\n")
    done = subprocess.run(
        [sys.executable, str(sigcheck), str(catalog), str(sigs)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " violations=0 " in done.stdout.splitlines()[-1]


@pytest.mark.corpus
def test_at_least_79_percent_of_livemcpbench_stays_flat() -> None:
    tools = load_catalog(corpus_path("livemcpbench", "tools.jsonl"))
    flat = sum(not t.signature.lossy for t in tools)
    assert len(tools) == 527
    assert flat / len(tools) >= 0.79


@pytest.mark.corpus
def test_mcpproxy_corpus_v2_signatures_are_sound() -> None:
    tools = load_catalog(corpus_path("mcpproxy", "corpus_v2.tools.json"))
    assert len(tools) == 45
    for tool in tools:
        if not tool.signature.lossy:
            assert soundness_problems(tool.input_schema, tool.signature.params) == [], tool.key
