"""Shared test fixtures: where the team kit (../shared beside the checkout) is, if present."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
KIT = REPO.parent / "shared"
CORPORA = KIT / "corpora"


def corpus_path(*parts: str) -> Path:
    """A path inside ../shared/corpora; skips the test with a reason when the kit is absent."""
    path = CORPORA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the team kit ../shared is not beside this checkout")
    return path
