"""The credential detectors compile their regex on first use, once: importing the rules (every agents
function's init) compiles none of them, and every rule is a valid pattern when it is needed."""

from __future__ import annotations

import json
import re
import subprocess
import sys

from foldgate.guard.secret_rules import DETECTORS
from tests.conftest import REPO


def test_importing_the_rules_compiles_no_detector() -> None:
    code = (
        "import json; from foldgate.guard import secret_rules as r; a = r._compiled.cache_info().currsize; "
        "r.DETECTORS[0].regex; print(json.dumps([a, r._compiled.cache_info().currsize]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
        env={"PYTHONPATH": str(REPO / "shared")},
    )  # fmt: skip
    assert json.loads(out.stdout) == [0, 1]


def test_every_detector_compiles_once_with_its_flags() -> None:
    for detector in DETECTORS:
        compiled = detector.regex
        assert isinstance(compiled, re.Pattern)
        assert compiled.pattern == detector.source
        assert compiled.flags & detector.flags == detector.flags
        assert detector.regex is compiled
