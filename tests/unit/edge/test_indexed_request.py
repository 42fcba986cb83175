"""Indexed request headers answer every lookup exactly as Starlette's scan does: first value, every
value in order, membership and KeyError, whatever the case asked for, duplicates and names the server
did not lowercase; iteration, length and the raw list are Starlette's own."""

from __future__ import annotations

import random

import pytest
from starlette.datastructures import Headers

from foldgate.edge.indexed_request import IndexedHeaders, IndexedRequest

_NAMES = ["host", "accept", "mcp-name", "mcp-protocol-version", "origin", "Authorization", "x-dup"]
_ASKED = [*_NAMES, "HOST", "Mcp-Name", "authorization", "missing", "ORIGIN", "x-DUP", ""]


def _raw(rng: random.Random) -> list[tuple[bytes, bytes]]:
    return [
        (rng.choice(_NAMES).encode("latin-1"), rng.choice(["a", "b, c", "", "é"]).encode("latin-1"))
        for _ in range(rng.randrange(0, 9))
    ]


@pytest.mark.parametrize("seed", range(40))
def test_every_lookup_answers_as_starlettes_scan(seed: int) -> None:
    rng = random.Random(seed)
    raw = _raw(rng)
    plain = Headers(scope={"headers": list(raw)})
    indexed = IndexedHeaders({"headers": list(raw)})
    for name in _ASKED:
        assert indexed.get(name) == plain.get(name)
        assert indexed.get(name, "fallback") == plain.get(name, "fallback")
        assert indexed.getlist(name) == plain.getlist(name)
        assert (name in indexed) == (name in plain)
        if name in plain:
            assert indexed[name] == plain[name]
        else:
            with pytest.raises(KeyError):
                indexed[name]
    assert list(indexed) == list(plain)
    assert (len(indexed), indexed.raw, indexed.items()) == (len(plain), plain.raw, plain.items())
    assert indexed == plain


def test_getlist_hands_out_a_copy() -> None:
    headers = IndexedHeaders({"headers": [(b"mcp-name", b"a"), (b"mcp-name", b"b")]})
    headers.getlist("mcp-name").append("c")
    assert headers.getlist("mcp-name") == ["a", "b"]


def test_a_request_reads_its_scope_headers_indexed() -> None:
    request = IndexedRequest({"type": "http", "headers": ((b"accept", b"application/json"),)})
    assert isinstance(request.headers, IndexedHeaders)
    assert request.headers is request.headers
    assert request.headers.get("Accept") == "application/json"
    assert request.scope["headers"] == [(b"accept", b"application/json")]  # made a list, as Starlette does
