"""``bench coldstart``: a bare interpreter and a handler timed in fresh processes in both bytecode states
(compiled at init, shipped), the handler's init above the bare floor with more modules, a git revision
as ``before``, and the table naming every variant."""

from __future__ import annotations

from pathlib import Path

from foldgate.dev.bench.coldstart import format_coldstart_report, run_coldstart_bench, ships_bytecode
from tests.conftest import REPO


def test_one_round_times_the_bare_floor_and_the_handler_cold_and_shipped() -> None:
    report = run_coldstart_bench(rounds=1, handlers=("code",))
    rows = report["handlers"]
    assert set(rows) == {"bare", "code/cold", "code/shipped"}
    assert rows["bare"]["init_ms"] == 0.0
    for mode in ("cold", "shipped"):
        assert rows[f"code/{mode}"]["init_ms"] > 0
        assert rows[f"code/{mode}"]["modules"] > rows["bare"]["modules"]
    assert rows["code/cold"]["modules"] == rows["code/shipped"]["modules"]  # one init, two bytecode states
    # This checkout's layer build ships bytecode, so its deployed figure is the shipped one.
    assert report["deployed"]["code"]["bytecode"] == "shipped"
    text = format_coldstart_report(report)
    assert "bare" in text
    assert "code/shipped" in text


def test_a_git_revision_is_timed_as_before_in_the_same_run() -> None:
    report = run_coldstart_bench(rounds=1, handlers=("code",), before=["HEAD"], modes=("shipped",))
    assert report["before"] == ["HEAD"]
    assert set(report["handlers"]) == {"bare", "code/shipped", "HEAD:code/shipped"}
    assert report["handlers"]["code/shipped"]["vs_before"]["HEAD"] > 0
    deployed = report["deployed"]
    assert set(deployed["code"]["vs"]) == {"HEAD"}
    assert "HEAD:code/shipped" in format_coldstart_report(report)


def test_a_checkout_ships_bytecode_when_its_layer_build_compiles_it(tmp_path: Path) -> None:
    assert ships_bytecode(REPO)
    (tmp_path / "layers" / "deps").mkdir(parents=True)
    (tmp_path / "layers" / "deps" / "Makefile").write_text("build-DependencyLayer:\n\tpip install\n")
    assert not ships_bytecode(tmp_path)


def test_the_cloud_store_times_the_deployed_init_against_moto() -> None:
    # The cloud init opens boto3's clients and reads the token secret: more modules than SQLite's.
    cloud = run_coldstart_bench(rounds=1, handlers=("mcp",), modes=("shipped",), store="dynamodb")
    local = run_coldstart_bench(rounds=1, handlers=("mcp",), modes=("shipped",))
    assert cloud["store"] == "dynamodb"
    assert cloud["handlers"]["mcp/shipped"]["modules"] > local["handlers"]["mcp/shipped"]["modules"]
