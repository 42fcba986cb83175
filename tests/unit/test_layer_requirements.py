"""The Lambda dependency layer ships what pyproject declares, for the runtime the template names.

layers/deps/requirements.txt is what `sam build` installs into DependencyLayer; pyproject's
[project].dependencies is what the tests run against. They must list the same distributions (the
layer may add extras, never drop one), and each layer pin must satisfy pyproject's specifier.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers" / "deps"


def _by_name(reqs: list[Requirement]) -> dict[str, Requirement]:
    out: dict[str, Requirement] = {}
    for req in reqs:
        name = canonicalize_name(req.name)
        assert name not in out, f"{req.name} is listed twice"
        out[name] = req
    return out


def _project() -> dict[str, Requirement]:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return _by_name([Requirement(line) for line in doc["project"]["dependencies"]])


def _layer() -> dict[str, Requirement]:
    lines = (LAYER / "requirements.txt").read_text().splitlines()
    reqs = [line.split("#", 1)[0].strip() for line in lines]
    return _by_name([Requirement(req) for req in reqs if req])


def test_layer_lists_the_same_distributions_as_pyproject() -> None:
    project, layer = _project(), _layer()
    only_project, only_layer = sorted(set(project) - set(layer)), sorted(set(layer) - set(project))
    assert (only_project, only_layer) == ([], []), (
        "layers/deps/requirements.txt and pyproject's [project].dependencies differ: "
        f"only in pyproject {only_project}, only in the layer {only_layer}"
    )


def test_layer_keeps_every_extra_pyproject_asks_for() -> None:
    project, layer = _project(), _layer()
    for name, req in project.items():
        if name in layer:
            missing = req.extras - layer[name].extras
            assert not missing, f"the layer's {name} lacks extras {sorted(missing)}"


def test_layer_pins_are_exact_and_within_pyproject_ranges() -> None:
    project, layer = _project(), _layer()
    for name, req in layer.items():
        specs = list(req.specifier)
        assert len(specs) == 1, f"{name}: pin exactly one version (==), got {req.specifier or 'nothing'}"
        assert specs[0].operator == "==", f"{name}: pin with ==, got {specs[0]}"
        if name in project:
            version = specs[0].version
            assert project[name].specifier.contains(version, prereleases=True), (
                f"{name}=={version} in the layer is outside pyproject's {project[name].specifier}"
            )


def test_layer_targets_the_runtime_of_the_template() -> None:
    template = (ROOT / "template.yaml").read_text()
    makefile = (LAYER / "Makefile").read_text()
    found = re.search(r"^LAMBDA_PYTHON\s*:?=\s*(\d+\.\d+)\s*$", makefile, re.MULTILINE)
    assert found, "layers/deps/Makefile must set LAMBDA_PYTHON"
    runtime = f"python{found.group(1)}"
    runtimes = set(re.findall(r"\bpython3\.\d+\b", template))
    assert runtimes == {runtime}, f"template names {sorted(runtimes)}, the layer is built for {runtime}"


@pytest.mark.parametrize("line", ["mcp==2.3.0", "aws-lambda-powertools[tracer]==3.37.0"])
def test_requirement_lines_parse(line: str) -> None:
    # The layer file is read with packaging's parser, exactly as pip reads it.
    assert Requirement(line).specifier


def _make_var(text: str, name: str) -> str:
    found = re.search(rf"^{name}\s*:?=\s*(.+?)\s*$", text, re.MULTILINE)
    assert found, f"{name} is not set"
    return found.group(1)


def test_layer_ships_the_model_the_search_looks_for() -> None:
    from foldgate.search.embed import DEFAULT_MODEL_NAME, default_model_dirs

    layer_make = (LAYER / "Makefile").read_text()
    root_make = (ROOT / "Makefile").read_text()
    assert _make_var(layer_make, "MODEL_NAME") == DEFAULT_MODEL_NAME
    assert _make_var(root_make, "MODEL_NAME") == DEFAULT_MODEL_NAME
    # The layer unpacks under /opt: $(ARTIFACTS_DIR)/model/<name> is /opt/model/<name> at run time.
    assert '"$(ARTIFACTS_DIR)/model/$(MODEL_NAME)/"' in layer_make
    assert Path("/opt/model") / DEFAULT_MODEL_NAME in default_model_dirs()
    assert ROOT / ".model" / DEFAULT_MODEL_NAME in default_model_dirs()


def test_layer_no_deps_packages_are_listed() -> None:
    no_deps = _make_var((LAYER / "Makefile").read_text(), "NO_DEPS").split()
    assert no_deps
    assert {canonicalize_name(n) for n in no_deps} <= set(_layer())
