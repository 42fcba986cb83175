"""mkdocs hook: the reference pages (``docs/reference/*.md``) are generated from the code on every build.

They exist only in the built site (``tools/gen_reference.py`` makes them), so they cannot drift from the
tenant config models, the settings, the template or the CLI.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gen_reference  # the path above makes the tool importable
from mkdocs.structure.files import File, Files


def on_files(files: Files, config: Any) -> Files:
    """Add every generated reference page to the site's files before the nav is built."""
    for rel, text in gen_reference.pages().items():
        files.append(File.generated(config, rel, content=text))
    return files
