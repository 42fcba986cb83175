"""The local model runtime and its weights are development tools (`make llm`): neither llama-cpp-python
nor a GGUF package may reach the project's dependencies, the Lambda layer or a function's requirements."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = ("llama-cpp", "llama_cpp", "gguf", "smollm", "gemma")


def _requirement_files() -> list[Path]:
    return [ROOT / "layers" / "deps" / "requirements.txt", *sorted(ROOT.glob("functions/*/requirements.txt"))]


def test_no_local_model_package_is_a_project_dependency() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    listed = [
        *project["dependencies"],
        *(d for extra in project["optional-dependencies"].values() for d in extra),
    ]
    assert [d for d in listed if any(f in d.lower() for f in FORBIDDEN)] == []


def test_no_local_model_package_reaches_the_lambda_layer_or_a_function() -> None:
    files = _requirement_files()
    assert files[0].is_file()
    offenders = [
        f"{path.relative_to(ROOT)}: {line}"
        for path in files
        if path.is_file()
        for line in path.read_text(encoding="utf-8").splitlines()
        if any(f in line.lower() for f in FORBIDDEN)
    ]
    assert offenders == []
