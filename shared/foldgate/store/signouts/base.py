"""Console sessions that were signed out: the interface.

A console session is a signed cookie any instance verifies without state
(:mod:`foldgate.edge.console.session`), so signing out in the browser alone would leave a copy of the
cookie valid until it expires. Sign-out therefore records the session's random id here until that
expiry, and every console request with a valid cookie asks whether its session was signed out: the
store is shared by every instance (the SQLite file locally, the table in the cloud), so a copied cookie
is refused everywhere from the next request on. After its expiry a record is useless (the cookie is
refused as expired anyway), so backends drop it then.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

__all__ = ["SignOutStore"]


class SignOutStore(ABC):
    """Signed-out console session ids, each kept until its session would have expired."""

    @abstractmethod
    def sign_out(self, sid: str, until: float) -> None:
        """Record session ``sid`` as signed out until ``until`` (its expiry, epoch seconds); recording
        it again is harmless."""

    @abstractmethod
    def signed_out(self, sid: str) -> bool:
        """Whether session ``sid`` was signed out (False once its record's ``until`` has passed)."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources."""
