"""The package as a Python user installs it: a wheel built from this checkout, installed into a clean
virtualenv with no extras and no dev dependencies, runs its commands and serves a real upstream.

Pins: `foldgate --version`; `foldgate serve --upstream` against npm server-everything answers the
official `mcp` client (list, describe, call) on the routed surface; the features whose extras are
missing say which extra to install in one line instead of raising at import (GET /metrics, exact
token counts); `foldgate token create/list`, `foldgate tenant --help` and `foldgate index` run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import Client

from foldgate import __version__
from foldgate.dev.procs import free_port, stop_process
from tests.procs import REPO, everything_server, wait_http

pytestmark = pytest.mark.e2e

# What a wheel is built from: the sdist's inputs, copied so the build never writes into the checkout.
SOURCES = ("pyproject.toml", "README.md", "shared")


def _clean_env() -> dict[str, str]:
    # Nothing of this checkout leaks in: no PYTHONPATH (the tests run with shared/ on it), no settings.
    return {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "FOLDGATE_", "VIRTUAL_ENV"))}


def _run(
    cmd: list[str], *, env: dict[str, str] | None = None, cwd: Path | str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd, check=True, capture_output=True, text=True, timeout=600, env=env or _clean_env(), cwd=cwd
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ folder of a fresh virtualenv holding only the wheel and its required dependencies."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    for name in SOURCES:
        if (REPO / name).is_dir():
            shutil.copytree(
                REPO / name, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
            )
        else:
            shutil.copy2(REPO / name, src / name)
    dist = tmp / "dist"
    # Built as pip builds it for a user: in isolation, with the setuptools pyproject asks for (cached).
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(dist), str(src)])
    (wheel,) = dist.glob("foldgate-*.whl")
    venv = tmp / "venv"
    _run([sys.executable, "-m", "venv", str(venv)])
    # pip's cache makes this a copy on a machine that ran `make venv`; dependencies resolve as a user's do.
    _run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            str(wheel),
        ]
    )
    return venv / "bin"


def _env(tmp: Path) -> dict[str, str]:
    # State in tmp, and a home of its own (the per-user data directory is under it).
    return {**_clean_env(), "FOLDGATE_SQLITE_PATH": str(tmp / "store.sqlite3"), "HOME": str(tmp)}


def test_the_clean_install_has_no_dev_or_extra_packages(installed: Path) -> None:
    code = "import importlib.util as u, sys; sys.exit(any(u.find_spec(m) for m in sys.argv[1:]))"
    absent = ["prometheus_client", "quicktok", "llama_cpp", "pytest", "moto", "playwright"]
    done = subprocess.run([str(installed / "python"), "-c", code, *absent], env=_clean_env(), timeout=60)
    assert done.returncode == 0
    where = _run([str(installed / "python"), "-c", "import foldgate; print(foldgate.__file__)"], cwd="/")
    assert "site-packages" in where.stdout


def test_version(installed: Path) -> None:
    out = _run([str(installed / "foldgate"), "--version"]).stdout
    assert out.strip() == f"foldgate {__version__}"


def test_token_and_tenant_commands_run(installed: Path, tmp_path: Path) -> None:
    env = _env(tmp_path)
    fg = str(installed / "foldgate")
    created = json.loads(
        _run([fg, "token", "create", "--tenant", "t1", "--json"], env=env, cwd=tmp_path).stdout
    )
    listed = json.loads(_run([fg, "token", "list", "--json"], env=env, cwd=tmp_path).stdout)
    assert [g["token_id"] for g in listed] == [created["token_id"]]
    assert "apply" in _run([fg, "tenant", "--help"], env=env, cwd=tmp_path).stdout


def test_exact_token_counts_name_their_extra(installed: Path) -> None:
    code = "from foldgate.model.token_count import get_counter; get_counter('cl100k')"
    done = subprocess.run(
        [str(installed / "python"), "-c", code], env=_clean_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode != 0
    assert "pip install 'foldgate[tokens]'" in done.stderr


@pytest.fixture(scope="module")
def everything() -> Iterator[str]:
    with everything_server() as url:
        yield url


@pytest.fixture
def served(installed: Path, everything: str, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """`foldgate serve --upstream everything=…` from the clean install; (base URL, its log)."""
    port = free_port()
    log = tmp_path / "serve.log"
    cmd = [
        str(installed / "foldgate"),
        "serve",
        "--upstream",
        f"everything={everything}",
        "--port",
        str(port),
    ]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, env=_env(tmp_path), cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            wait_http(base + "/healthz", timeout=90)
            yield base, log
        finally:
            stop_process(proc)


async def test_serve_lists_describes_and_calls_with_the_official_client(served: tuple[str, Path]) -> None:
    base, log = served
    async with Client(f"{base}/mcp/all") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"describe_tool", "everything__echo"} <= names
        described = await client.call_tool("describe_tool", {"tool_ids": ["everything__echo"]})
        assert not described.is_error
        assert "message" in json.dumps(described.model_dump(mode="json"))
        called = await client.call_tool("everything__echo", {"message": "from a wheel"})
        assert not called.is_error
        assert "from a wheel" in json.dumps(called.model_dump(mode="json"))
    # The missing metrics extra is one line at start-up, never a traceback; so is the missing model.
    text = log.read_text()
    assert (
        "semantic search is off (lexical only) until the model is there: run `foldgate model install`" in text
    )
    assert [ln for ln in text.splitlines() if "pip install 'foldgate[metrics]'" in ln]
    assert "Traceback" not in text


def test_metrics_without_the_extra_answer_501_naming_it(served: tuple[str, Path]) -> None:
    base, log = served
    secret = _operator_key(log)
    request = urllib.request.Request(base + "/metrics", headers={"authorization": f"Bearer {secret}"})
    with pytest.raises(urllib.error.HTTPError) as answer:
        urllib.request.urlopen(request, timeout=10)
    assert answer.value.code == 501
    assert "pip install 'foldgate[metrics]'" in answer.value.read().decode()


def _operator_key(log: Path) -> str:
    # serve prints where the operator key lives ("… with the operator key in <file>").
    line = next(ln for ln in log.read_text().splitlines() if "admin API" in ln)
    return Path(line.rsplit(" in ", 1)[1].strip()).read_text().strip()


def test_model_install_plans_the_build_into_the_user_data_directory(installed: Path, tmp_path: Path) -> None:
    done = _run(
        [str(installed / "foldgate"), "model", "install", "--dry-run"], env=_env(tmp_path), cwd=tmp_path
    )
    assert f"building the search model into {tmp_path}/.local/share/foldgate/model/" in done.stdout
    assert "5. export to ONNX, quantise to int8, check against fp32" in done.stdout


def test_index_runs_once_and_reports(installed: Path, everything: str, tmp_path: Path) -> None:
    cmd = [str(installed / "foldgate"), "index", "--upstream", f"everything={everything}"]
    done = _run(cmd, env=_env(tmp_path), cwd=tmp_path)
    report = json.loads(done.stdout.splitlines()[0])
    assert report["tenant"] == "default"
    assert report["tools"] > 0
