"""Ship the dependency layer with bytecode compiled by the Lambda runtime's Python.

Lambda's layer directory (/opt) is read-only, so an instance cannot keep the ``.pyc`` its imports
compile: without shipped bytecode every new instance compiles foldgate and its dependencies from
source at init (``foldgate bench coldstart`` prints both figures). This compiles the built layer with
an interpreter of the runtime's exact minor version, never another: a ``.pyc`` is only read by the
CPython whose magic number wrote it, and a foreign one would be dead weight at best.

* Unchecked-hash ``.pyc`` (PEP 552): the import system loads them without comparing the source's
  mtime or hash, so the zip's timestamps (SAM zips the layer) cannot invalidate them, and a layer
  version never changes its sources.
* The interpreter is ``--interpreter`` if given, else ``python<X.Y>`` on PATH, else a pyenv or uv
  managed one; each candidate is asked its version, release level and magic number, and only a final
  release of exactly ``X.Y`` is used (a pre-release's magic may differ from the runtime's).
* ``--skip`` leaves paths uncompiled: ``.pyc`` add about 12% to the layer, and Lambda caps function
  plus layers at 250 MB, so what no cold path imports (OTLP export, unused parts of large packages)
  ships as source only.
* After compiling, every ``.pyc`` under the layer is checked: the runtime's cache tag in its name, its
  magic number and the unchecked-hash flags in its header; every foldgate module must have one.

Usage (layers/deps/Makefile, run by ``sam build``), stdlib only so any python3 runs it::

    PYTHONPATH=shared python3 -m foldgate.dev.layer_bytecode --python-version 3.13 [--require] DIR

Without a matching interpreter it says so on stderr and ships no bytecode (the layer works, the cold
start is slower), unless ``--require``.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Interpreter", "check_layer", "compile_layer", "find_interpreter", "main", "probe"]

_PROBE = (
    "import sys, json, importlib.util; print(json.dumps([list(sys.version_info[:3]), "
    "sys.version_info.releaselevel, importlib.util.MAGIC_NUMBER.hex(), sys.implementation.cache_tag, "
    "sys.implementation.name]))"
)
# compileall's workers parallelise; -I in the child keeps PYTHONPYCACHEPREFIX & co. from redirecting it.
_COMPILE = (
    "import compileall, py_compile, re, sys; compileall.compile_dir(sys.argv[1], quiet=2, workers=0, "
    "rx=re.compile(sys.argv[2]) if sys.argv[2] else None, "
    "invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)"
)
_UNCHECKED_HASH_FLAGS = 0b01  # PEP 552: bit 0 hash-based, bit 1 check_source (off)


@dataclass(frozen=True)
class Interpreter:
    """A CPython that can compile for the runtime: its path, version, magic number and cache tag."""

    path: str
    version: tuple[int, int, int]
    magic: bytes
    cache_tag: str


def probe(path: str, want: tuple[int, int]) -> Interpreter | None:
    """The interpreter at ``path`` if it runs and is a final CPython release of exactly ``want``."""
    try:
        out = subprocess.run(
            [path, "-I", "-c", _PROBE], capture_output=True, text=True, timeout=60, check=False
        )
    except OSError:
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None  # e.g. a pyenv shim for a version that is not selected
    version, level, magic, tag, impl = json.loads(out.stdout.strip().splitlines()[-1])
    if impl != "cpython" or tuple(version[:2]) != want or level != "final":
        return None
    return Interpreter(
        path=path, version=(version[0], version[1], version[2]), magic=bytes.fromhex(magic), cache_tag=tag
    )


def _candidates(want: tuple[int, int]) -> list[str]:
    exe = f"python{want[0]}.{want[1]}"
    found = [p for p in [shutil.which(exe)] if p]
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    uv = Path(os.environ.get("UV_PYTHON_INSTALL_DIR") or Path.home() / ".local" / "share" / "uv" / "python")
    for pattern in (
        str(pyenv / "versions" / f"{want[0]}.{want[1]}.*" / "bin" / exe),
        str(uv / f"cpython-{want[0]}.{want[1]}.*" / "bin" / exe),
    ):
        found += sorted(glob.glob(pattern), reverse=True)  # newest patch first (lexical is fine for a hint)
    found += [f"/usr/bin/{exe}", f"/usr/local/bin/{exe}"]
    return list(dict.fromkeys(found))


def find_interpreter(want: tuple[int, int], explicit: str | None = None) -> Interpreter | None:
    """The first candidate that is a final CPython ``want`` release (``explicit`` alone if given)."""
    for path in [explicit] if explicit else _candidates(want):
        found = probe(path, want)
        if found is not None:
            return found
    return None


def compile_layer(root: Path, interpreter: Interpreter, skip: list[str] | None = None) -> None:
    """Compile every ``.py`` under ``root`` into unchecked-hash ``.pyc`` with ``interpreter``, but for
    the paths (relative to ``root``, ``/``-separated) that a ``skip`` pattern matches the start of."""
    rx = "|".join(f"(?:{p})" for p in skip or [])
    rx = f"^{re.escape(str(root).rstrip('/'))}/(?:{rx})" if rx else ""
    subprocess.run([interpreter.path, "-I", "-c", _COMPILE, str(root), rx], check=True, timeout=1800)


def check_layer(root: Path, interpreter: Interpreter, package: str = "foldgate") -> list[str]:
    """What is wrong with ``root``'s bytecode (empty when nothing): a ``.pyc`` of another tag, magic or
    invalidation mode, or a module of ``package`` left without one."""
    problems: list[str] = []
    suffix = f".{interpreter.cache_tag}.pyc"
    for pyc in root.rglob("*.pyc"):
        rel = pyc.relative_to(root)
        if not pyc.name.endswith(suffix) or pyc.parent.name != "__pycache__":
            problems.append(f"{rel}: not a {interpreter.cache_tag} cache file")
            continue
        head = pyc.read_bytes()[:8]
        if head[:4] != interpreter.magic:
            problems.append(f"{rel}: magic {head[:4].hex()} is not {interpreter.magic.hex()}")
        elif int.from_bytes(head[4:8], "little") != _UNCHECKED_HASH_FLAGS:
            problems.append(f"{rel}: not unchecked-hash")
    for src in (root / package).rglob("*.py"):
        if not (src.parent / "__pycache__" / (src.stem + suffix)).is_file():
            problems.append(f"{src.relative_to(root)}: no bytecode")
    return problems


def main(argv: list[str] | None = None) -> int:
    """Compile and check a built layer's python/ folder; 0 also when skipped for want of an interpreter."""
    ap = argparse.ArgumentParser(
        prog="python -m foldgate.dev.layer_bytecode", description=__doc__.splitlines()[0]
    )
    ap.add_argument("root", type=Path, help="the layer's python/ folder")
    ap.add_argument(
        "--python-version", required=True, help="the Lambda runtime's X.Y (template.yaml Runtime)"
    )
    ap.add_argument("--interpreter", help="a python of that version (default: found on PATH, pyenv, uv)")
    ap.add_argument("--require", action="store_true", help="fail instead of shipping no bytecode")
    ap.add_argument(
        "--skip",
        action="append",
        default=[],
        help="a regular expression for paths under the layer left uncompiled (repeatable): what no "
        "cold path imports, to stay under Lambda's size limit",
    )
    args = ap.parse_args(argv)
    major, minor = (int(p) for p in args.python_version.split("."))
    interpreter = find_interpreter((major, minor), args.interpreter)
    if interpreter is None:
        print(
            f"layer_bytecode: no final CPython {major}.{minor} found (set LAYER_PYC_PYTHON); the layer ships "
            "no bytecode and every new Lambda instance compiles its imports at init",
            file=sys.stderr,
        )
        return 2 if args.require else 0
    compile_layer(args.root, interpreter, args.skip)
    problems = check_layer(args.root, interpreter)
    if problems:
        print("layer_bytecode: " + "\n  ".join(["bytecode check failed:", *problems[:20]]), file=sys.stderr)
        return 1
    count = sum(1 for _ in args.root.rglob("*.pyc"))
    version = ".".join(map(str, interpreter.version))
    print(f"layer_bytecode: {count} unchecked-hash .pyc by CPython {version} ({interpreter.path})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
