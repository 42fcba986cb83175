"""The package's architecture, checked from its source with ``ast``: no import cycles (counting
function-level and ``TYPE_CHECKING`` imports) between modules or between role packages, role packages
on the floors of docs/architecture.md (each imports only lower floors; nothing the Lambda layer ships
imports ``dev``), the MCP SDK kept behind ``edge`` and
``upstream``, the environment read only by ``config``, and every function-level import explained."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "shared" / "foldgate"
# What the Lambda layer does not ship (layers/deps/Makefile): developer tooling and the CLI.
NOT_IN_LAYER = (
    "foldgate.dev",
    "foldgate.app.cli",
    "foldgate.app.cli_audit",
    "foldgate.app.cli_bench",
    "foldgate.app.cli_stack",
    "foldgate.app.cli_tenant",
)
SDK_ROOTS = ("mcp", "mcp_types")
SDK_ALLOWED = ("foldgate.edge", "foldgate.upstream", "foldgate.dev")


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _within(name: str, roots: tuple[str, ...]) -> bool:
    return any(name == r or name.startswith(r + ".") for r in roots)


def _imports(module: str) -> Iterator[tuple[ast.stmt, str, bool]]:
    """(statement, imported module, at function level) for every import in the module."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    nested: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            nested.update(id(n) for n in ast.walk(node) if n is not node)
    package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node, alias.name, id(node) in nested
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                yield node, sub if sub in MODULES else base, id(node) in nested


def _graph() -> dict[str, set[str]]:
    return {m: {t for _, t, _ in _imports(m) if t in MODULES and t != m} for m in MODULES}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_package_is_found() -> None:
    assert "foldgate.serve.gateway" in MODULES
    assert len(MODULES) > 50


def test_no_import_cycles_counting_lazy_and_type_checking_imports() -> None:
    assert _cycles(_graph()) == []


def _package(module: str) -> str:
    # foldgate.<role>.<module> and foldgate.<role> itself; foldgate and foldgate.errors sit above the roles.
    parts = module.split(".")
    return (
        parts[1] if len(parts) > 2 or (len(parts) == 2 and MODULES[module].name == "__init__.py") else "<top>"
    )


def _package_graph() -> dict[str, set[str]]:
    """Role package -> the role packages it imports (directly, counting lazy imports)."""
    graph: dict[str, set[str]] = {}
    for m, targets in _graph().items():
        source = _package(m)
        graph.setdefault(source, set()).update(_package(t) for t in targets if _package(t) != source)
    for targets in list(graph.values()):
        for t in targets:
            graph.setdefault(t, set())
    return graph


def _package_pairs() -> set[frozenset[str]]:
    """Every two role packages that import each other (directly, counting lazy imports)."""
    edges = {(_package(m), _package(t)) for m, targets in _graph().items() for t in targets}
    return {frozenset((a, b)) for a, b in edges if a != b and (b, a) in edges}


def test_no_two_role_packages_import_each_other() -> None:
    assert sorted(map(sorted, _package_pairs())) == []


def test_the_role_packages_form_no_cycle() -> None:
    # Longer loops too (a -> b -> c -> a).
    assert _cycles(_package_graph()) == []


# The floors of docs/architecture.md ("Layering"), lowest first: a package imports only packages on
# lower floors (and foldgate.errors), never one on its own floor or above.
FLOORS: tuple[tuple[str, ...], ...] = (
    ("model",),
    ("guard", "telemetry", "code", "store"),
    ("config",),
    ("search", "upstream"),
    ("auth", "enrich"),
    ("index", "serve"),
    ("edge",),
    ("dev",),
    ("app",),
)
FLOOR = {package: n for n, floor in enumerate(FLOORS) for package in floor}


def test_every_role_package_has_a_floor() -> None:
    assert sorted(set(_package_graph()) - {"<top>"}) == sorted(FLOOR)


def test_packages_import_only_lower_floors() -> None:
    upward = [
        f"{a} -> {b}"
        for a, targets in _package_graph().items()
        for b in targets
        if "<top>" not in (a, b) and FLOOR[b] >= FLOOR[a]
    ]
    assert sorted(upward) == []


def test_the_cycle_finder_sees_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("top", ["foldgate.app", "foldgate.dev"])
def test_nothing_below_imports_the_top_roles(top: str) -> None:
    offenders = [
        f"{m} -> {t}"
        for m in MODULES
        if not _within(m, ("foldgate.app", "foldgate.dev"))
        for _, t, _ in _imports(m)
        if _within(t, (top,))
    ]
    assert offenders == []


def test_what_the_layer_ships_never_imports_dev_tooling() -> None:
    offenders = [
        f"{m} -> {t}"
        for m in MODULES
        if not _within(m, NOT_IN_LAYER)
        for _, t, _ in _imports(m)
        if _within(t, NOT_IN_LAYER)
    ]
    assert offenders == []


def test_the_mcp_sdk_stays_behind_edge_and_upstream() -> None:
    offenders = [
        f"{m} -> {t}"
        for m in MODULES
        if not _within(m, SDK_ALLOWED)
        for _, t, _ in _imports(m)
        if _within(t, SDK_ROOTS)
    ]
    assert offenders == []


def test_only_the_config_package_reads_the_environment() -> None:
    offenders = []
    for m, path in MODULES.items():
        if _within(m, ("foldgate.config", "foldgate.dev")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
                and node.attr in ("environ", "getenv", "environb")
            ):
                offenders.append(f"{m}:{node.lineno}")
    assert offenders == []


def test_every_function_level_import_says_why() -> None:
    """A lazy import is for cold start (or a heavy optional dependency); a comment on the line before
    the first import of a group, or on the import line, says so."""
    missing = []
    for m, path in MODULES.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for node, _, lazy in _imports(m):
            if not lazy:
                continue
            row = node.lineno - 1
            # Walk up over the group's other imports and blank lines to the comment above the group.
            above = row - 1
            while above >= 0 and (
                lines[above].strip().startswith(("from ", "import ")) or not lines[above].strip()
            ):
                above -= 1
            if "#" not in lines[row] and not (above >= 0 and lines[above].strip().startswith("#")):
                missing.append(f"{m}:{node.lineno}")
    assert sorted(set(missing)) == []


# The guard is the lowest floor above the data model: index, serve and enrich call it, never the reverse.
GUARD_MAY_IMPORT = ("foldgate.guard", "foldgate.model", "foldgate.errors")


def test_the_guard_imports_nothing_above_the_model() -> None:
    offenders = [
        f"{m} -> {t}"
        for m in MODULES
        if _within(m, ("foldgate.guard",))
        for _, t, _ in _imports(m)
        if _within(t, ("foldgate",)) and not _within(t, GUARD_MAY_IMPORT)
    ]
    assert offenders == []


def test_every_detector_lives_in_the_guard() -> None:
    # Poisoning rules, phrases, theft, markup, normalisation and the learned scorers: one room.
    strays = [
        m
        for m in MODULES
        if m.rpartition(".")[2].startswith("poison_") and not _within(m, ("foldgate.guard",))
    ]
    assert strays == []
