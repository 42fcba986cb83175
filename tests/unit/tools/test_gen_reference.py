"""tools/gen_reference.py: the generated reference pages name every tenant config field, environment
variable, template parameter and CLI flag, each in its own place, found independently of the generator."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import typing
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from pydantic import BaseModel

from foldgate.app.cli import _parser
from foldgate.config.enrichment import EnrichmentSettings
from foldgate.config.secret_refs import SecretSource
from foldgate.config.settings import Settings
from foldgate.config.tenant import TenantConfig

ROOT = Path(__file__).resolve().parents[3]


def _load_tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", ROOT / "tools" / "gen_reference.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_reference"] = module
    spec.loader.exec_module(module)
    return module


gen = _load_tool()


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    built: dict[str, str] = gen.pages()
    return built


def _sections(page: str) -> dict[str, str]:
    """``## heading`` → the text below it, up to the next heading."""
    parts = re.split(r"^## (.+)$", page, flags=re.MULTILINE)
    return {parts[i].strip(): parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def _nested(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _nested(arg)]


def test_every_tenant_config_field_is_documented_under_its_model(pages: dict[str, str]) -> None:
    sections = _sections(pages["reference/config.md"])
    todo: list[type[BaseModel]] = [TenantConfig, SecretSource]
    seen: set[type[BaseModel]] = set()
    while todo:
        model = todo.pop()
        if model in seen:
            continue
        seen.add(model)
        assert model.__name__ in sections, f"{model.__name__} has no section"
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in sections[model.__name__], f"{model.__name__}.{name}"
            todo.extend(_nested(field.annotation))
    # The walk reached the nested models (servers, their auth, the guard, the oauth block, ...).
    assert {"ServerConfig", "GuardConfig", "CodeExecutionConfig"} <= {m.__name__ for m in seen}
    assert len(seen) >= 8


def test_config_rows_carry_type_default_constraint_and_description(pages: dict[str, str]) -> None:
    server = _sections(pages["reference/config.md"])["ServerConfig"]
    row = next(line for line in server.splitlines() if line.startswith("| `max_concurrency` |"))
    for cell in ("`int`", "`16`", "`ge=1`", "`le=256`"):
        assert cell in row
    assert "Calls in flight to this upstream at once" in row
    name_row = next(line for line in server.splitlines() if line.startswith("| `name` |"))
    assert "**required**" in name_row


def test_every_environment_variable_is_documented(pages: dict[str, str]) -> None:
    page = pages["reference/env.md"]
    expected = {f"FOLDGATE_{n.upper()}" for n in Settings.model_fields}
    expected |= {f"FOLDGATE_ENRICHMENT_{n.upper()}" for n in EnrichmentSettings.model_fields}
    # Every full variable name the package spells out (outside the dev benches, which set them for
    # child processes) and every standard variable the config package reads must be there too.
    package = ROOT / "shared" / "foldgate"
    for path in package.rglob("*.py"):
        if "dev" in path.relative_to(package).parts:
            continue
        text = path.read_text(encoding="utf-8")
        expected |= set(re.findall(r'"(FOLDGATE_[A-Z0-9_]*[A-Z0-9])"', text))
        if path.parent.name == "config":
            expected |= set(re.findall(r'"((?:OTEL|POWERTOOLS)_[A-Z0-9_]*[A-Z0-9])"', text))
    assert "FOLDGATE_CACHE_MB" in expected
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" in expected
    missing = sorted(v for v in expected if f"`{v}`" not in page)
    assert not missing, missing


def test_every_template_parameter_is_documented(pages: dict[str, str]) -> None:
    text = (ROOT / "template.yaml").read_text(encoding="utf-8")
    block = text.split("\nParameters:\n", 1)[1]
    block = re.split(r"^[A-Za-z]", block, maxsplit=1, flags=re.MULTILINE)[0]  # up to the next section
    names = re.findall(r"^  ([A-Za-z0-9]+):\s*$", block, flags=re.MULTILINE)
    assert len(names) > 20
    page = pages["reference/template.md"]
    missing = [n for n in names if f"| `{n}` |" not in page]
    assert not missing, missing
    # The same set the tool reads, nothing invented.
    assert len(re.findall(r"^\| `[A-Za-z0-9]+` \|", page, flags=re.MULTILINE)) == len(names)


def _commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ("foldgate",)
) -> list[tuple[str, argparse.ArgumentParser]]:
    found = [(" ".join(path), parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += _commands(sub, (*path, name))
    return found


def test_every_cli_command_and_flag_is_documented_under_its_command(pages: dict[str, str]) -> None:
    sections = _sections(pages["reference/cli.md"])
    commands = _commands(_parser())
    assert {"foldgate serve", "foldgate tenant apply", "foldgate token create"} <= {c for c, _ in commands}
    for command, parser in commands:
        section = sections.get(f"`{command}`")
        assert section is not None, command
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            for flag in action.option_strings or [action.dest]:
                assert f"`{flag}`" in section, f"{command} {flag}"


def test_the_template_loader_reads_short_tags() -> None:
    doc = yaml.load("A: !Ref B\nC: !GetAtt [D, E]\nF: !Sub {x: y}\n", Loader=gen._CfnLoader)
    assert doc == {"A": "B", "C": ["D", "E"], "F": {"x": "y"}}


def test_main_writes_the_pages(tmp_path: Path) -> None:
    assert gen.main(["--out", str(tmp_path)]) == 0
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.md"))
    assert written == sorted(gen.pages())
