"""An MCP request whose headers are looked up in a dict, not by a scan of the raw list per lookup.

Starlette's :class:`~starlette.datastructures.Headers` answers each ``get`` by lowercasing and encoding
the name and walking every raw header, and a missing one by raising and catching a KeyError (~0.5-1 us
a lookup). The MCP path reads a request's headers some fifteen times (Host and Origin, the content
headers, the protocol version, the routing headers, credentials, trace context): here the raw list is
read into a dict once, on the first lookup, and every answer is the one Starlette's scan would give.
"""

from __future__ import annotations

from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request

__all__ = ["IndexedHeaders", "IndexedRequest"]


class IndexedHeaders(Headers):
    """Request headers (from an ASGI scope) with the lookups answered from a dict built once.

    Keys are matched as Starlette matches them: the name asked for, lowercased, against the raw name
    as the server gave it (ASGI servers give lowercase names); values in order, latin-1 decoded."""

    def __init__(self, scope: Any) -> None:
        super().__init__(scope=scope)
        self._index: dict[str, list[str]] | None = None

    def _values(self) -> dict[str, list[str]]:
        index = self._index
        if index is None:
            index = {}
            for key, value in self._list:
                index.setdefault(key.decode("latin-1"), []).append(value.decode("latin-1"))
            self._index = index
        return index

    def getlist(self, key: str) -> list[str]:
        """Every value of ``key``, in order."""
        return list(self._values().get(key.lower(), ()))

    def get(self, key: str, default: Any = None) -> Any:
        """The first value of ``key``, else ``default``."""
        values = self._values().get(key.lower())
        return default if values is None else values[0]

    def __getitem__(self, key: str) -> str:
        values = self._values().get(key.lower())
        if values is None:
            raise KeyError(key)
        return values[0]

    def __contains__(self, key: Any) -> bool:
        return key.lower() in self._values()


class IndexedRequest(Request):
    """A Starlette request whose ``headers`` are :class:`IndexedHeaders`."""

    @property
    def headers(self) -> Headers:
        """The request's headers, indexed on first lookup."""
        if not hasattr(self, "_headers"):
            self._headers = IndexedHeaders(self.scope)
        return self._headers
