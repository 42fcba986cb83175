"""The edge's one encoding rule for answers (model/jsonutil.wire): compact UTF-8 with non-ASCII kept
raw, and a lone UTF-16 surrogate (which UTF-8 cannot carry) sent as its JSON escape, so the body is
valid UTF-8 and decodes to exactly the string given."""

from __future__ import annotations

import json

from foldgate.model.jsonutil import wire, wire_text


def test_lone_surrogates_are_escaped_and_decode_back_to_the_same_string() -> None:
    message = {"id": "a\ud800b", "result": {"text": "é\udfff", "k\udc00": ["\udbff"]}}
    body = wire(message)
    assert body.decode("utf-8")  # strict UTF-8
    assert b"\\ud800" in body
    assert "é".encode() in body  # the rest stays raw
    assert json.loads(body) == message


def test_text_without_surrogates_is_encoded_unchanged() -> None:
    text = '{"a":"☃ é"}'
    assert wire_text(text) == text.encode("utf-8")
