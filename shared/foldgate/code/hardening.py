"""Process hardening the host needs before any agent code runs, checked rather than hoped for.

The sandbox worker runs as the same user as the gateway. Linux lets a same-user process read another's
memory and ``/proc/<pid>/environ`` (where Lambda keeps the AWS credentials) unless that process is
*non-dumpable*. So the host marks itself non-dumpable, then reads the flag back: if the call failed or
did not take effect (no ``prctl``, a seccomp filter, a kernel that ignores it), agent code is refused
with :class:`SandboxUnavailableError` instead of running next to readable credentials.
"""

from __future__ import annotations

import ctypes
from typing import Any, Final

from foldgate.errors import SandboxUnavailableError

__all__ = ["make_not_dumpable"]

_PR_GET_DUMPABLE: Final = 3
_PR_SET_DUMPABLE: Final = 4


def _libc() -> Any:
    """The C library's prctl, or None where there is none (not Linux)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def make_not_dumpable() -> None:
    """Mark this process non-dumpable and check that it is; raise SandboxUnavailableError otherwise."""
    prctl = _libc()
    if prctl is None:
        raise SandboxUnavailableError(
            "code execution is unavailable: this platform cannot mark the gateway non-dumpable"
        )
    result = int(prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0))
    errno = ctypes.get_errno()
    state = int(prctl(_PR_GET_DUMPABLE, 0, 0, 0, 0))
    if result != 0 or state != 0:
        # Details for the operator's log; the agent only learns that code cannot run here.
        raise SandboxUnavailableError(
            "code execution is unavailable: the gateway could not make itself non-dumpable "
            f"(prctl returned {result}, errno {errno}, dumpable is {state}); agent code is refused"
        )
