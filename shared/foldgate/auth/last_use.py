"""Tokens' last uses, written beside requests, never in front of one.

:class:`~foldgate.auth.authority.TokenAuthority` hands each due use (at most one a minute per token and
instance) to :meth:`UseWriter.submit`, which only records it in memory under a lock; a writer thread
(started on the first use) stores them with :meth:`TokenStore.touch`. A verification therefore never
waits for a store write (one is ~3 ms on SQLite, a DynamoDB round trip in the cloud).

On Lambda the thread is frozen with the instance between invocations and resumes with the next, as
the activity recorder's writer does (foldgate.serve.activity_recorder); what an instance still holds
when Lambda reclaims it is lost, which costs a *last used* that is at most a minute or two old. A failed
write is logged and dropped: the use a minute later writes again.
"""

from __future__ import annotations

import logging
import threading

from foldgate.errors import StoreError
from foldgate.store.tokens.base import TokenStore

__all__ = ["UseWriter"]

log = logging.getLogger(__name__)


class UseWriter:
    """Pending last uses by token id (the latest of each), stored by a daemon thread."""

    def __init__(self, store: TokenStore, *, max_pending: int = 10_000) -> None:
        self.store = store
        self.max_pending = max(1, max_pending)
        self._lock = threading.Lock()
        self._pending: dict[str, float] = {}
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._thread: threading.Thread | None = None

    def submit(self, token_id: str, at: float) -> None:
        """Queue a use (no I/O); beyond ``max_pending`` distinct tokens waiting, a new one is dropped."""
        with self._lock:
            if token_id not in self._pending and len(self._pending) >= self.max_pending:
                return
            self._pending[token_id] = max(at, self._pending.get(token_id, at))
            self._idle.clear()
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="foldgate-token-uses", daemon=True)
                self._thread.start()
        self._wake.set()

    def flush(self, timeout: float = 10.0) -> bool:
        """Wait until every queued use was written (or failed); False if that took over ``timeout``."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            while True:
                with self._lock:
                    if not self._pending:
                        self._idle.set()
                        break
                    batch, self._pending = self._pending, {}
                for token_id, at in batch.items():
                    self._write(token_id, at)

    def _write(self, token_id: str, at: float) -> None:
        try:
            self.store.touch(token_id, at)
        except StoreError as exc:
            # A missed "last used" is not worth more than a line: the next use writes again.
            log.warning("could not record the use of token %s: %s", token_id, exc.message)
        except Exception:  # the thread must outlive any one bad write
            log.exception("could not record the use of token %s", token_id)
