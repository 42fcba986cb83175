"""The generated search tuning sets for tests: tools/tuning_sets.py loaded as a module, sets materialised."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from tests.conftest import REPO, corpus_path

REFS = REPO / "tests" / "data" / "tuning"


def tuning_sets_module() -> ModuleType:
    """tools/tuning_sets.py (a script, not a package module) imported once."""
    cached = sys.modules.get("tuning_sets")
    if cached is not None:
        return cached
    spec = importlib.util.spec_from_file_location("tuning_sets", REPO / "tools" / "tuning_sets.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["tuning_sets"] = module
    spec.loader.exec_module(module)
    return module


def multi_intent_queries(out: Path) -> Path:
    """The multi-intent set as a queries.jsonl under ``out`` (skips without the team kit)."""
    ts = tuning_sets_module()
    source = ts.read_jsonl(corpus_path("mcptoolbench-pp", "queries.jsonl"))
    rows = ts.materialise(ts.read_jsonl(REFS / "multi_intent.jsonl"), source)
    path = out / "multi_intent.queries.jsonl"
    ts.write_jsonl(path, rows)
    return path
