"""Process hardening for hosts that run agent code."""

from __future__ import annotations

__all__ = ["make_not_dumpable"]

_PR_SET_DUMPABLE = 4


def make_not_dumpable() -> bool:
    """Mark this process non-dumpable before any agent code runs: the sandbox worker runs as the same
    user, and a non-dumpable process's memory and ``/proc/<pid>/environ`` (where Lambda keeps the AWS
    credentials) are closed to other unprivileged processes. Linux only; True when it took effect."""
    try:
        # ctypes is needed only here, once per process that runs agent code.
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False
