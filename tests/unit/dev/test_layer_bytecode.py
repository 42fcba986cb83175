"""The layer's bytecode step: only a final CPython of the runtime's exact version compiles, its .pyc are
unchecked-hash (loaded without looking at the source), and the check rejects any other bytecode."""

from __future__ import annotations

import importlib.util
import os
import py_compile
import subprocess
import sys
from pathlib import Path

import pytest

from foldgate.dev.layer_bytecode import Interpreter, check_layer, compile_layer, main, probe

HERE = (sys.version_info[0], sys.version_info[1])
TAG = sys.implementation.cache_tag


def _layer(tmp: Path) -> Path:
    root = tmp / "python"
    (root / "foldgate" / "sub").mkdir(parents=True)
    (root / "foldgate" / "__init__.py").write_text("")
    (root / "foldgate" / "sub" / "__init__.py").write_text("")
    (root / "foldgate" / "sub" / "mod.py").write_text("VALUE = 'compiled'\n")
    (root / "dep").mkdir()
    (root / "dep" / "__init__.py").write_text("X = 1\n")
    (root / "dep" / "py2_only.py").write_text("print 'a dependency file that never compiles'\n")
    return root


def _this() -> Interpreter:
    found = probe(sys.executable, HERE)
    assert found is not None
    return found


def test_probe_accepts_only_the_exact_minor_version() -> None:
    found = _this()
    assert found.magic == importlib.util.MAGIC_NUMBER
    assert found.cache_tag == TAG
    assert found.version == tuple(sys.version_info[:3])
    assert probe(sys.executable, (HERE[0], HERE[1] + 1)) is None
    assert probe("/nonexistent/python", HERE) is None


def test_compiled_layer_loads_its_bytecode_without_reading_the_source(tmp_path: Path) -> None:
    root = _layer(tmp_path)
    compile_layer(root, _this())
    assert check_layer(root, _this()) == []
    pyc = root / "foldgate" / "sub" / "__pycache__" / f"mod.{TAG}.pyc"
    assert int.from_bytes(pyc.read_bytes()[4:8], "little") == 0b01  # hash-based, source not checked
    # The source changes after the build (as a zip's timestamps do): the shipped bytecode still loads.
    (root / "foldgate" / "sub" / "mod.py").write_text("VALUE = 'source'\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")} | {"PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", "from foldgate.sub.mod import VALUE; print(VALUE)"],
        capture_output=True, text=True, env=env, check=True, timeout=60,
    )  # fmt: skip
    assert out.stdout.strip() == "compiled"


def test_check_rejects_bytecode_of_another_interpreter_or_mode(tmp_path: Path) -> None:
    root = _layer(tmp_path)
    compile_layer(root, _this())
    other = Interpreter(
        path=sys.executable, version=(3, 99, 0), magic=b"\x00\x00\r\n", cache_tag="cpython-399"
    )
    assert any("not a cpython-399 cache file" in p for p in check_layer(root, other))
    timestamped = root / "dep" / "__init__.py"
    py_compile.compile(str(timestamped), invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    assert check_layer(root, _this()) == [f"dep/__pycache__/__init__.{TAG}.pyc: not unchecked-hash"]
    (root / "foldgate" / "late.py").write_text("")
    assert "foldgate/late.py: no bytecode" in check_layer(root, _this())


def test_main_compiles_with_the_runtime_version_and_skips_or_fails_without_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _layer(tmp_path)
    wrong = f"{HERE[0]}.{HERE[1] + 1}"
    assert main([str(root), "--python-version", wrong, "--interpreter", sys.executable]) == 0
    assert "ships no bytecode" in capsys.readouterr().err
    assert not list(root.rglob("*.pyc"))
    assert main([str(root), "--python-version", wrong, "--interpreter", sys.executable, "--require"]) == 2
    assert main([str(root), "--python-version", f"{HERE[0]}.{HERE[1]}", "--interpreter", sys.executable]) == 0
    assert (root / "foldgate" / "sub" / "__pycache__" / f"mod.{TAG}.pyc").is_file()
    assert "unchecked-hash .pyc by CPython" in capsys.readouterr().out


def test_skipped_paths_stay_source_only(tmp_path: Path) -> None:
    root = _layer(tmp_path)
    (root / "dep" / "unused").mkdir()
    (root / "dep" / "unused" / "big.py").write_text("Y = 2\n")
    compile_layer(root, _this(), skip=["dep/(unused)/"])
    assert (root / "dep" / "__pycache__" / f"__init__.{TAG}.pyc").is_file()
    assert not (root / "dep" / "unused" / "__pycache__").exists()
    assert check_layer(root, _this()) == []
