"""What McpFunction's and CodeFunction's init imports: agents-only functions never load the admin API,
the console, FastAPI (its routing and OpenAPI models) nor the MCP SDK, import exactly the pinned
third-party packages, and stay within a module budget.

Each handler's ``functions/<name>/app.py`` runs in a fresh interpreter (as a Lambda init does) against a
SQLite store and a config file; the modules it leaves in ``sys.modules`` are checked.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.unit.app.function_init import after_init

# Never at an agents-only function's init: the admin API and console (AdminFunction's), FastAPI and
# its OpenAPI models (the agents app is Starlette; the OAuth client routes load on first use), the SDK
# (loaded by the first request that needs it), the console's templates, the search model's runtime.
FORBIDDEN = (
    "fastapi",
    "foldgate.edge.admin",
    "foldgate.edge.console",
    "foldgate.edge.connect",
    "foldgate.edge.user_connect",
    "foldgate.edge.hooks",
    "mcp",
    "jinja2",
    "onnxruntime",
    "foldgate.search.dense",
    "foldgate.enrich.pipeline",
)
# Modules in sys.modules after init (525 measured when pinned: 520 before the call path's second pass
# added five small modules, the pooled sessions' HTTP/1.1 transport, the heap settling, the indexed
# headers, the context-variable scopes and the plain-schema check; 499 before the enterprise auth
# kinds' config models and flows and the call path's one-pass modules, 622 before FastAPI left the
# path): a new heavy dependency on the init path fails here before it reaches every cold start.
BUDGET = 525
# The third-party packages an agents-only init imports (with the SQLite store; the cloud store adds
# boto3's): a new one on the init path is a cold-start cost every instance pays, so it is a decision
# made here, and one that leaves frees a module budget to lower.
INIT_PACKAGES = {
    "annotated_types",
    "anyio",
    "mangum",
    "pydantic",
    "pydantic_core",
    "python_multipart",
    "regex",
    "starlette",
    "typing_extensions",
    "typing_inspection",
}


def _init_modules(name: str, tmp: Path) -> dict[str, str | None]:
    """Each module in ``sys.modules`` after ``functions/<name>/app.py`` ran, with its file."""
    code = (
        "import sys, json; "
        "print(json.dumps({n: getattr(m, '__file__', None) for n, m in list(sys.modules.items())}))"
    )
    modules: dict[str, str | None] = json.loads(after_init(name, tmp, code))
    return modules


@pytest.mark.parametrize("name", ["mcp", "code"])
def test_agents_only_init_imports_nothing_it_does_not_serve(name: str, tmp_path: Path) -> None:
    modules = _init_modules(name, tmp_path)
    loaded = [m for m in modules if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]
    assert loaded == []
    assert len(modules) <= BUDGET, f"{len(modules)} modules at init (budget {BUDGET})"
    # Installed packages (site-packages), less the virtualenv's own start-up hooks (_distutils_hack).
    packages = {n.split(".")[0] for n, f in modules.items() if f and "site-packages" in f}
    assert {p for p in packages if not p.startswith("_")} == INIT_PACKAGES


def test_the_admin_function_still_serves_the_admin_api(tmp_path: Path) -> None:
    # The other side of the split: AdminFunction's init has the admin API (so the check above is real).
    modules = _init_modules("admin", tmp_path)
    assert "foldgate.edge.admin" in modules
    assert "fastapi" in modules
