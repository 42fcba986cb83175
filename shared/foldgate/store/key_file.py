"""Local key files: created once with 32 random bytes (mode 0600, written whole), then reused.

The token HMAC key, the operator key, hook secrets (``foldgate.auth``) and the grant cipher's key
(``foldgate.store.grants``) all live in such a file beside the SQLite store when nothing else holds
them, so the file handling sits here, below both.
"""

from __future__ import annotations

import logging
import os
import secrets
import stat
from pathlib import Path

from foldgate.errors import ConfigError

__all__ = ["create_key", "read_or_create_key"]

log = logging.getLogger(__name__)


def read_or_create_key(path: Path) -> str:
    """A local key file's text, created (32 random bytes, mode 0600) when absent."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return create_key(path)
    except OSError as exc:
        raise ConfigError(f"cannot read key file {path}: {exc.strerror or exc}") from exc
    if stat.S_IMODE(path.stat().st_mode) & 0o077:
        log.warning("key file %s is readable by other users; run: chmod 600 %s", path, path)
    return text


def create_key(path: Path) -> str:
    """Create a new local key file (32 random bytes as hex, mode 0600) and return its text."""
    value = secrets.token_hex(32)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written whole under a private name, then linked into place: link never overwrites, so two
        # processes starting at once end up sharing one key, and nobody ever reads a half-written file.
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                os.fchmod(f.fileno(), 0o600)  # the mode above is masked by umask; be exact
                f.write(value + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)
            except FileExistsError:
                return path.read_text(encoding="utf-8")  # another process created it first
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise ConfigError(f"cannot create key file {path}: {exc.strerror or exc}") from exc
    log.info("created key file %s", path)
    return value
