"""`foldgate bench scale`: every scale benchmark in turn, each the same command as on its own; pinned
on the quota part at its ``--quick`` sizes (the other parts have tests of their own) and on refusing a
part that does not exist."""

from __future__ import annotations

import pytest

from foldgate.app.cli import main


def test_bench_scale_runs_the_parts_asked_for_under_their_own_names(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["bench", "scale", "--parts", "quota", "--quick"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== foldgate bench scale-quota\n")
    assert "admitted / quota over the run" in out
    assert "scale-indexing" not in out


def test_bench_scale_refuses_an_unknown_part(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "scale", "--parts", "quota,everything"])
    assert exited.value.code == 2
    assert "unknown part(s) everything" in capsys.readouterr().err
