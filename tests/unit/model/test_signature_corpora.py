"""Soundness over every real catalog in ../shared/corpora: our own check and the team's sigcheck.

Both read each non-lossy signature back (inline objects recursively) and validate the calls an agent
would build from it against the real schema: 0 unsound signatures on every corpus, and grammar v2 makes
more tools flat than v1 on each. Skips cleanly without ../shared.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from foldgate.dev.corpus import load_catalog
from foldgate.model.signature import compile_signature
from tests.conftest import CORPORA, KIT, corpus_path
from tests.helpers import soundness_problems

KNOWN = [
    "mcpproxy/corpus_v1.tools.json",
    "mcpproxy/corpus_v2.tools.json",
    "mcpproxy/livemcptool_snapshot/tools.json",
    "livemcpbench/tools.jsonl",
    "github-mcp-server/tools.jsonl",
    "mcp-flow/tools.jsonl",
    "mcptoolbench-pp/tools.jsonl",
    "mcp-proxy-snapshots/tools.jsonl",
]


def _discovered() -> set[str]:
    patterns = ("*/tools.jsonl", "*/*/tools.json", "*/*.tools.json")
    found = {str(p.relative_to(CORPORA)) for pattern in patterns for p in CORPORA.glob(pattern)}
    return {f for f in found if "/original/" not in f}


def _sigcheck(corpus: Path, tmp: Path, *, inline: bool) -> tuple[int, int, int, str]:
    """(returncode, violations, flat, output) of sigcheck on the catalog's signatures."""
    checker = KIT / "tools" / "sigcheck.py"
    if not checker.exists():
        pytest.skip(f"{checker} is absent")
    tools = load_catalog(corpus)
    tools_file, sigs_file = tmp / "tools.jsonl", tmp / f"sigs-{inline}.jsonl"
    with tools_file.open("w", encoding="utf-8") as f:
        for t in tools:
            f.write(json.dumps({"server": t.server, "name": t.name, "inputSchema": t.input_schema}) + "\n")
    with sigs_file.open("w", encoding="utf-8") as f:
        for t in tools:
            sig = compile_signature(t.input_schema, inline=inline)
            row = {"id": f"{t.server}__{t.name}", "signature": sig.params, "lossy": sig.lossy}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    run = subprocess.run(
        [sys.executable, str(checker), str(tools_file), str(sigs_file)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    last = run.stdout.strip().splitlines()[-1]
    fields = dict(part.split("=", 1) for part in last.split())
    return run.returncode, int(fields["violations"]), int(fields["flat"].split("/")[0]), run.stdout


@pytest.mark.corpus
@pytest.mark.parametrize("relative", KNOWN)
def test_every_flat_signature_in_the_corpus_is_sound(relative: str) -> None:
    tools = load_catalog(corpus_path(*relative.split("/")))
    bad = []
    for tool in tools:
        sig = tool.signature
        if not sig.lossy and isinstance(tool.input_schema, dict):
            problems = soundness_problems(tool.input_schema, sig.params)
            if problems:
                bad.append((tool.key, sig.params, problems))
    assert bad == []


@pytest.mark.corpus
@pytest.mark.parametrize("relative", KNOWN)
def test_sigcheck_finds_no_unsound_signature_and_v2_flattens_more(relative: str, tmp_path: Path) -> None:
    corpus = corpus_path(*relative.split("/"))
    code, violations, flat_v2, output = _sigcheck(corpus, tmp_path, inline=True)
    assert (code, violations) == (0, 0), output
    _, _, flat_v1, _ = _sigcheck(corpus, tmp_path, inline=False)
    assert flat_v2 >= flat_v1
    if relative != "mcpproxy/corpus_v1.tools.json":  # the older 45-tool file may hold no small objects
        assert flat_v2 > flat_v1


@pytest.mark.corpus
def test_every_catalog_in_the_kit_is_checked() -> None:
    corpus_path()  # skips without the kit
    assert _discovered() <= set(KNOWN), "a new corpus in ../shared/corpora: add it to KNOWN"


@pytest.mark.corpus
def test_nearly_nine_in_ten_livemcpbench_tools_are_flat() -> None:
    tools = load_catalog(corpus_path("livemcpbench", "tools.jsonl"))
    flat = sum(not t.signature.lossy for t in tools)
    assert len(tools) == 527
    assert flat >= 469  # grammar v1: 435
