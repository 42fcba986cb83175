"""tests/node_clients.py: how the conformance harness reads its expected-failures files and the suite's
result folders (a misread would silently turn failures into passes or hide scenarios)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.node_clients import CONFORMANCE_DIR, RESULT_DIR, ScenarioResult, expected_failures


def test_expected_failures_read_scenario_and_reason_and_skip_comments(tmp_path: Path) -> None:
    listing = tmp_path / "x.txt"
    listing.write_text("# header\n\nresources-list  # not proxied yet\nping # slow # really\n")
    assert expected_failures(listing) == {"resources-list": "not proxied yet", "ping": "slow # really"}


@pytest.mark.parametrize("line", ["resources-list", "resources-list  #", "  # reason only"])
def test_an_expected_failure_without_a_reason_is_refused(tmp_path: Path, line: str) -> None:
    listing = tmp_path / "x.txt"
    listing.write_text(line + "\n")
    if line.strip().startswith("#"):
        assert expected_failures(listing) == {}  # a comment line, not an entry
    else:
        with pytest.raises(ValueError, match="scenario  # reason"):
            expected_failures(listing)


@pytest.mark.parametrize("name", ["expected-failures.txt", "expected-failures-lambda.txt"])
def test_the_shipped_listings_give_every_entry_a_reason(name: str) -> None:
    entries = expected_failures(CONFORMANCE_DIR / name)
    assert entries
    assert all(len(reason) > 10 for reason in entries.values())


@pytest.mark.parametrize(
    ("folder", "scenario"),
    [
        ("server-tools-list-2026-11-30T19-40-13-799Z", "tools-list"),
        ("server-server-sse-polling-2026-11-30T19-40-14-351Z", "server-sse-polling"),
        ("server-resources-templates-read-2026-01-02T03-04-05-006Z", "resources-templates-read"),
    ],
)
def test_result_folders_name_their_scenario(folder: str, scenario: str) -> None:
    match = RESULT_DIR.match(folder)
    assert match is not None
    assert match.group(1) == scenario


def test_a_scenario_passes_only_without_failure_checks() -> None:
    warned = ScenarioResult("s", [{"id": "a", "status": "SUCCESS"}, {"id": "b", "status": "WARNING"}])
    failed = ScenarioResult("s", [{"id": "a", "status": "SUCCESS"}, {"id": "c", "status": "FAILURE"}])
    assert warned.passed
    assert warned.warnings == ["b: None"]
    assert not failed.passed
    assert failed.failures == ["c: None"]
