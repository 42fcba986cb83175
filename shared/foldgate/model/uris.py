"""Published resource URIs: ``foldgate://<server>/<upstream uri, percent-escaped>``, reversible.

Two upstreams may both serve ``file:///README.md``; the gateway publishes each under its server so the
two cannot collide, and maps a published URI back to (server, upstream URI) by parsing, never by a
table, so URIs made from templates map back too. The upstream URI is escaped as a whole (``/``, ``:``,
``%`` and ``{`` included), so the part after the server is one opaque path segment whatever it holds.

Templates keep their RFC 6570 expressions (``{id}``, ``{?q}``) verbatim so clients can still expand
them; only the literal text between expressions is escaped. A client's expansion of ``{id}`` inserts
percent-encoded values, so mapping back decodes them once: ``{id}`` = ``a/b`` reaches the upstream
as ``a/b`` (what a client of the upstream itself would usually send, decoded by the upstream anyway).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final
from urllib.parse import quote, unquote

__all__ = ["SCHEME", "origin_template", "origin_uri", "publish_template", "publish_uri"]

SCHEME: Final = "foldgate://"
# A server name's alphabet (config.tenant): a published URI whose server part is anything else is
# nobody's, and answers like any other unknown URI.
_SERVER = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# One RFC 6570 expression: no nested braces.
_EXPRESSION = re.compile(r"\{[^{}]*\}")


def _escape(text: str) -> str:
    # surrogatepass: JSON can carry lone surrogates; they must survive the round trip, not raise.
    return quote(text, safe="", errors="surrogatepass")


def publish_uri(server: str, uri: str) -> str:
    """The URI agents see for ``uri`` of ``server``."""
    return f"{SCHEME}{server}/{_escape(uri)}"


def _map_literals(template: str, fn: Callable[[str], str]) -> str:
    parts: list[str] = []
    last = 0
    for match in _EXPRESSION.finditer(template):
        parts.append(fn(template[last : match.start()]))
        parts.append(match.group(0))
        last = match.end()
    parts.append(fn(template[last:]))
    return "".join(parts)


def publish_template(server: str, template: str) -> str:
    """The URI template agents see for ``template`` of ``server``: literals escaped, expressions kept."""
    return f"{SCHEME}{server}/{_map_literals(template, _escape)}"


def _split(published: str) -> tuple[str, str] | None:
    if not isinstance(published, str) or not published.startswith(SCHEME):
        return None
    server, slash, rest = published[len(SCHEME) :].partition("/")
    if not slash or not _SERVER.match(server):
        return None
    return server, rest


def _unescape(text: str) -> str:
    return unquote(text, errors="surrogatepass")


def origin_uri(published: str) -> tuple[str, str] | None:
    """(server, upstream URI) for a published URI, including one a client expanded from a published
    template; None when it is not one of ours."""
    split = _split(published)
    return None if split is None else (split[0], _unescape(split[1]))


def origin_template(published: str) -> tuple[str, str] | None:
    """(server, upstream template) for a published template: exact inverse of :func:`publish_template`
    (expressions are kept as written, only the literals between them are unescaped)."""
    split = _split(published)
    return None if split is None else (split[0], _map_literals(split[1], _unescape))
